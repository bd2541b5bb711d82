//! What a start asks for and what it answers: the words of the start command (`start.rs`),
//! shared by whoever starts an instance (the API, triggers, a `subworkflow` node, a failure
//! handler). Pure data.

use super::lineage::Lineage;
use serde_json::Value;
use trellis_model::trace::TraceParent;
use trellis_model::InstanceStatus;
use uuid::Uuid;

/// What a start asks for: build it with [`StartRequest::new`] and set what applies.
#[derive(Debug, Clone)]
pub struct StartRequest {
    pub workflow: Uuid,
    /// `None`: the latest published version.
    pub version: Option<i64>,
    pub input: Value,
    /// The business key (the workflow's `key_reuse` policy applies to it).
    pub key: Option<String>,
    pub idempotency_key: Option<String>,
    /// The caller's W3C trace context: the instance span becomes a child of it.
    pub trace_parent: Option<TraceParent>,
    /// Set when a `subworkflow` node starts the instance as its child.
    pub parent: Option<ParentLink>,
    /// Set when the instance is a failure handler's run: the failed instance it handles.
    pub handles_failure_of: Option<Uuid>,
    /// Where the instance stands in the chain of instances started by one another (a child's
    /// or a handler's: see `lineage.rs`); a start by a person or trigger is at the top.
    pub lineage: Lineage,
    /// The start of a debounced burst's instance (`debounce.rs`): the id every start of the
    /// burst was answered. Not debounced again, nor counted by the rate limit (its starts were).
    pub burst: Option<Uuid>,
    /// The idempotency key alone names the instance: a start repeating it is answered with the
    /// first instance even when its input differs (a broker message's redelivery, whose
    /// headers may have changed), where a REST client's repeat with another body is refused.
    pub key_names_instance: bool,
    /// The person or API key that asked for it (`Principal::name`); `None` for a trigger, a
    /// schedule, a parent or a failure handler. An approval's `allow_starter` reads it.
    pub started_by: Option<String>,
}

/// The `subworkflow` node attempt that starts a child instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentLink {
    pub instance: Uuid,
    pub node: String,
    pub attempt: i32,
}

impl StartRequest {
    pub fn new(workflow: Uuid, input: Value) -> StartRequest {
        StartRequest {
            workflow,
            version: None,
            input,
            key: None,
            idempotency_key: None,
            trace_parent: None,
            parent: None,
            handles_failure_of: None,
            lineage: Lineage::default(),
            burst: None,
            key_names_instance: false,
            started_by: None,
        }
    }

    pub fn idempotency_key(self, idempotency_key: String) -> StartRequest {
        StartRequest { idempotency_key: Some(idempotency_key), ..self }
    }
}

#[derive(Debug, Clone)]
pub struct Started {
    pub id: Uuid,
    pub status: InstanceStatus,
    pub version: i64,
    /// Folded into a `debounce` burst: `id` is the burst's instance, made when it ends.
    pub debounced: bool,
    /// Answered from an earlier start with the same idempotency key: nothing new was made.
    pub repeated: bool,
}
