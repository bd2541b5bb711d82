//! Rows and write sets of the engine's tables: instances, their nodes, their history (the work
//! queue's are `work_records.rs`). Their JSON columns are read leniently (`lenient.rs`): one
//! unreadable row never fails a read.

use super::lenient::{Lenient, LenientOpt};
use super::work_records::NewWork;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use trellis_model::trace::EventKind;
use trellis_model::{InstanceStatus, NodeStatus, WaitKind};
use uuid::Uuid;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InstanceRow {
    pub id: Uuid,
    pub workflow_id: Uuid,
    pub version: i64,
    pub status: InstanceStatus,
    #[sqlx(try_from = "Lenient")]
    pub input: Json<Value>,
    #[sqlx(try_from = "LenientOpt")]
    pub output: Option<Json<Value>>,
    pub error: Option<String>,
    pub business_key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// W3C trace id (32 hex digits); `None` means the instance id's hex.
    pub trace_id: Option<String>,
    /// The caller's span the instance span hangs under (from `traceparent`).
    pub parent_span_id: Option<String>,
    /// 1, then one more per retry (`POST /instances/{id}/retry`).
    pub run: i32,
    /// Of a child instance (started by a `subworkflow` node): the parent, the node and the
    /// node's attempt that started it.
    pub parent_instance_id: Option<Uuid>,
    pub parent_node_id: Option<String>,
    pub parent_attempt: Option<i32>,
    /// 0 for an instance nobody started as a child; a child's is its parent's + 1.
    pub depth: i32,
    /// The value of the workflow's `concurrency_key` when it started, as JSON text.
    pub concurrency_key: Option<String>,
    /// Of a failure handler's run: the failed instance it handles.
    pub handles_failure_of: Option<Uuid>,
    /// 0 unless a failure handler: the failed instance's + 1 (bounds handler chains).
    pub failure_depth: i32,
    /// One more at every write of the instance's row, nodes or history (`store/snapshots.rs`).
    pub rev: i64,
}

impl InstanceRow {
    /// A new instance of a new workflow in `status`, for unit tests to change what they need.
    #[cfg(test)]
    pub fn for_test(status: InstanceStatus) -> InstanceRow {
        let now = Utc::now();
        let running = status != InstanceStatus::Queued;
        InstanceRow {
            id: Uuid::now_v7(),
            workflow_id: Uuid::now_v7(),
            version: 1,
            status,
            input: Json(Value::Null),
            output: None,
            error: None,
            business_key: None,
            created_at: now,
            started_at: running.then_some(now),
            ended_at: None,
            trace_id: None,
            parent_span_id: None,
            run: 1,
            parent_instance_id: None,
            parent_node_id: None,
            parent_attempt: None,
            depth: 0,
            concurrency_key: None,
            handles_failure_of: None,
            failure_depth: 0,
            rev: 0,
        }
    }

    /// The W3C trace id of the instance's spans: the caller's (from `traceparent` on the
    /// start), else one derived from the instance id.
    pub fn trace_id(&self) -> String {
        self.trace_id.clone().unwrap_or_else(|| self.id.simple().to_string())
    }
}

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NodeRow {
    pub node_id: String,
    /// The node's index in the execution plan.
    pub position: i32,
    pub status: NodeStatus,
    pub attempts: i32,
    pub outcome: Option<String>,
    #[sqlx(try_from = "LenientOpt")]
    pub output: Option<Value>,
    pub error: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// When the current attempt was dispatched: its span's start.
    pub dispatched_at: Option<DateTime<Utc>>,
    /// What the node waits on and since when: an open span.
    pub wait_kind: Option<WaitKind>,
    pub wait_started_at: Option<DateTime<Utc>>,
}

impl NodeRow {
    /// A node of a new instance: pending, never attempted.
    pub fn fresh(node_id: String, position: i32, status: NodeStatus) -> NodeRow {
        NodeRow {
            node_id,
            position,
            status,
            attempts: 0,
            outcome: None,
            output: None,
            error: None,
            started_at: None,
            ended_at: None,
            dispatched_at: None,
            wait_kind: None,
            wait_started_at: None,
        }
    }
}

/// One entry for an instance's history, before the store numbers it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: EventKind,
    pub at: DateTime<Utc>,
    pub data: Value,
}

/// A numbered entry of an instance's history.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredEvent {
    pub seq: i64,
    pub kind: EventKind,
    pub at: DateTime<Utc>,
    #[sqlx(try_from = "Lenient")]
    pub data: Json<Value>,
}

/// An instance with its nodes in plan order, as a transition sees it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub instance: InstanceRow,
    pub nodes: Vec<NodeRow>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InstanceUpdate {
    pub status: InstanceStatus,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// Of a failure: the node that failed (none for an instance timeout) and the error's class.
    pub failure: Option<(Option<String>, String)>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// A retry: the next run begins, so the last run's end, output and error are cleared
    /// and `started_at` is replaced rather than kept.
    pub restart: bool,
}

/// Everything one transition writes, committed together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Writes {
    pub instance: Option<InstanceUpdate>,
    /// Whole rows replacing the stored ones (matched by node id).
    pub nodes: Vec<NodeRow>,
    pub new_work: Vec<NewWork>,
    /// Remove the instance's remaining work: it has finished.
    pub clear_work: bool,
    /// Attempts that just ended (node id, attempt): their leftover work (the run item of a
    /// timed-out attempt, its timeout timer, its task) is removed, so late results from
    /// them are fenced out.
    pub ended_attempts: Vec<(String, i32)>,
    /// History entries, numbered by the store in this order.
    pub events: Vec<NewEvent>,
    /// Set by the store once written: the `seq` of `events[0]`.
    pub first_seq: Option<i64>,
    /// A work item for another instance: the parent a finishing child wakes. Inserted only
    /// if that instance still exists (a purged parent is not an error).
    pub wake: Option<(Uuid, NewWork)>,
    /// A retry from the start: the results of the instance's `map` items are forgotten, so
    /// every item runs again (only a retry writes it; see `retry_instance`).
    pub forget_map_items: bool,
}

impl Writes {
    pub fn is_empty(&self) -> bool {
        self.instance.is_none()
            && self.nodes.is_empty()
            && self.new_work.is_empty()
            && !self.clear_work
            && self.ended_attempts.is_empty()
            && self.wake.is_none()
            // A history entry alone (a note on an ended instance) is a change too.
            && self.events.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct NewInstance {
    pub row: InstanceRow,
    pub nodes: Vec<NodeRow>,
    /// The workflow's concurrency limits, and whether to reject beyond them.
    pub limits: AdmissionLimits,
    /// The workflow's business-key policy (checked only when the row has a key).
    pub key_reuse: trellis_model::KeyReuse,
    /// What starting it writes, applied if it is admitted at once, decided at `admits_at`.
    pub on_admit: Writes,
    /// The clock reading `on_admit` was decided at (its `created_at`).
    pub admits_at: DateTime<Utc>,
    /// Decides `on_admit` again at a later time: a limited start is admitted at a time the
    /// store reads holding the workflow's lock (`queries/admission_clock.rs`).
    pub admit_at: AdmitAt,
    /// The request's `Idempotency-Key` and a hash of the request, if it had one.
    pub idempotency: Option<(String, String)>,
    /// History entries of creating it; `queued_events` follow if it has to wait for a slot.
    pub created_events: Vec<NewEvent>,
    pub queued_events: Vec<NewEvent>,
}

impl NewInstance {
    /// What admitting it at `at` writes: `on_admit` if that is when it was decided.
    pub fn on_admit_at(&self, at: DateTime<Utc>) -> Writes {
        match at == self.admits_at {
            true => self.on_admit.clone(),
            false => (self.admit_at.0)(at),
        }
    }
}

/// What admitting a new instance at a given time writes (decided by the engine).
#[derive(Clone)]
pub struct AdmitAt(pub std::sync::Arc<dyn Fn(DateTime<Utc>) -> Writes + Send + Sync>);

impl std::fmt::Debug for AdmitAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdmitAt")
    }
}

/// A child instance as its parent's page shows it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ChildRow {
    pub id: Uuid,
    pub parent_node_id: Option<String>,
    pub parent_attempt: Option<i32>,
    pub status: InstanceStatus,
}

/// The first start made with an Idempotency-Key.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredStart {
    pub request_hash: String,
    pub instance_id: Uuid,
    pub status: InstanceStatus,
    pub version: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StartOutcome {
    /// Admitted at once, at `at` (its `started_at`; `NewInstance::on_admit_at`). (A new
    /// instance's history starts at `seq` 1: `created_events`, then the queued or the
    /// admission entries.)
    Running {
        at: DateTime<Utc>,
    },
    Queued,
    /// The workflow (or the instance's concurrency key) is at its limit and refuses rather
    /// than queues.
    Rejected(Held),
    /// A start with the same Idempotency-Key was made before; nothing new was created.
    Repeated(StoredStart),
    /// Another instance with the business key is live (`None`: it ended just after
    /// refusing this one); nothing was created.
    KeyLive(Option<Uuid>),
    /// The key-reuse policy refuses the key because of this earlier instance.
    KeyUsed {
        id: Uuid,
        status: InstanceStatus,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum TransitionOutcome {
    Applied(Box<Writes>),
    /// The decision was to change nothing.
    Unchanged,
    /// The fence was stale: someone else holds (or finished) the work.
    Fenced,
    NotFound,
}

/// Connection pool use, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolStats {
    pub size: u32,
    pub idle: u32,
    pub max: u32,
}

/// Engine-wide numbers read from the database for `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct EngineGauges {
    pub queued_by_workflow: Vec<(Uuid, i64)>,
    /// Delays, retry backoffs and timeouts not yet fired.
    pub pending_timers: i64,
    pub pool: PoolStats,
    /// Instances this process remembers as it last wrote them, and their bytes (`snapshots.rs`).
    pub snapshots: usize,
    pub snapshot_bytes: usize,
}
/// Where a queued instance stands: instances ahead of it in its workflow's FIFO queue and
/// how many of the workflow's instances hold a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuePlace {
    pub ahead: i64,
    pub active: i64,
}

/// The limits admission holds a workflow's instances to: those of its latest version.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// `max_concurrent_instances`.
    pub instances: Option<u32>,
    /// `max_per_key`, when the workflow has a `concurrency_key`.
    pub per_key: Option<u32>,
    /// `on_limit: reject`: a start beyond a limit is refused rather than queued.
    pub reject: bool,
}

impl AdmissionLimits {
    /// Whether admission has anything to hold back: a start or retry must ask for a slot.
    pub fn any(&self) -> bool {
        self.instances.is_some() || self.per_key.is_some()
    }
}

/// An outcome, or the limit that refused it.
pub type Refusable<T> = std::result::Result<T, Held>;

/// What holds back an instance that asks for a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// `max_concurrent_instances`, or earlier instances of the workflow waiting for it.
    Workflow,
    /// `max_per_key`, or earlier instances with the same key waiting for it.
    Key,
}
