//! Starting instances (idempotency keys, business keys, concurrency limits and keys). A start
//! is written by its own store call (`start_instance`), then joins the commit path at its
//! last step (`commit.rs`, react); `admission.rs` admits queued instances.

use super::control::refuse_nul;
use super::effects::{decide, Detail};
use super::machine::Event;
use super::reserve::PRELEASE_MAX;
use super::trace::Tracer;
use super::Engine;
use super::EngineError;
use crate::store::{InstanceRow, NewInstance, NodeRow, Snapshot, StartOutcome};
use chrono::Utc;
use serde_json::Value;
use sqlx::types::Json;
use std::sync::Arc;
use trellis_model::trace::TraceParent;
use trellis_model::{InstanceStatus, NodeStatus};
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
}

/// The `subworkflow` node attempt that starts a child instance, and the child's depth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentLink {
    pub instance: Uuid,
    pub node: String,
    pub attempt: i32,
    pub depth: i32,
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
}

impl Engine {
    /// Starts an instance. With an `idempotency_key`, repeating the same request returns the
    /// first answer and creates nothing; the same key with a different request is refused.
    pub async fn start(self: &Arc<Self>, request: StartRequest) -> Result<Started, EngineError> {
        let StartRequest { workflow, version, input, key, idempotency_key, trace_parent, parent } = request;
        refuse_nul(&input, "the input")?;
        let size = serde_json::to_vec(&input).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > self.config.max_input_bytes {
            return Err(EngineError::TooLarge(format!(
                "the input is {size} bytes; the limit is {}",
                self.config.max_input_bytes
            )));
        }
        let record = self
            .store
            .get_workflow(workflow)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no workflow with id {workflow}")))?;
        let latest = record
            .latest_version
            .ok_or_else(|| EngineError::Conflict("the workflow has no published version; publish one first".into()))?;
        let version = version.unwrap_or(latest);
        if version < 1 || version > latest {
            return Err(EngineError::NotFound(format!("workflow {workflow} has no version {version}")));
        }
        let plan = self.plan(workflow, version).await?;
        // The workflow's concurrency limits (and key) are those of its latest version.
        let limits = self.plan(workflow, latest).await?;
        let concurrency_key = super::concurrency_key::evaluate(&limits, &input, self.sandbox()).await?;
        let now = Utc::now();
        let row = InstanceRow {
            id: Uuid::now_v7(),
            workflow_id: workflow,
            version,
            status: InstanceStatus::Queued,
            input: Json(input),
            output: None,
            error: None,
            business_key: key,
            created_at: now,
            started_at: None,
            ended_at: None,
            trace_id: trace_parent.as_ref().map(|p| p.trace_id.clone()),
            parent_span_id: trace_parent.map(|p| p.span_id),
            run: 1,
            parent_instance_id: parent.as_ref().map(|p| p.instance),
            parent_node_id: parent.as_ref().map(|p| p.node.clone()),
            parent_attempt: parent.as_ref().map(|p| p.attempt),
            depth: parent.as_ref().map_or(0, |p| p.depth),
            concurrency_key,
        };
        let nodes: Vec<NodeRow> = plan
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeRow::fresh(n.id.clone(), i as i32, NodeStatus::Pending))
            .collect();
        let tracer = Tracer { plan: &plan, instance: &row, now };
        let (created_events, queued_events) = (tracer.created(false), tracer.created(true).split_off(1));
        let fresh = Snapshot { instance: row.clone(), nodes: nodes.clone() };
        let reservation = self.reserve(PRELEASE_MAX);
        let mut on_admit = decide(&plan, &fresh, Event::Start, &Detail::default(), now, 0.0);
        reservation.lease_runs(&mut on_admit, &self.owner);
        let id = row.id;
        let request_hash = request_hash(version, &row.input.0, row.business_key.as_deref());
        let idempotency = idempotency_key.map(|k| (k, request_hash.clone()));
        let new = NewInstance {
            row,
            nodes,
            limits: limits.admission(),
            on_admit: on_admit.clone(),
            idempotency,
            created_events: created_events.clone(),
            queued_events: queued_events.clone(),
            key_reuse: limits.key_reuse,
        };
        let status = match self.start_keyed(&new).await? {
            StartOutcome::Running => {
                // The history starts with creation, then admission (see `start_instance`).
                let after = created_events.len() as i64;
                self.bus.committed(id, workflow, 1, &created_events);
                on_admit.first_seq = Some(after + 1);
                self.react_and_admit(&plan, id, &on_admit, reservation).await;
                InstanceStatus::Running
            }
            StartOutcome::Queued => {
                self.bus.committed(id, workflow, 1, &[created_events, queued_events].concat());
                InstanceStatus::Queued
            }
            StartOutcome::Rejected(held) => {
                let key = new.row.concurrency_key.as_deref();
                return Err(EngineError::LimitReached(super::concurrency_key::limit_reached(&limits, held, key)));
            }
            StartOutcome::Repeated(first) if first.request_hash == request_hash => {
                return Ok(Started { id: first.instance_id, status: first.status, version: first.version });
            }
            StartOutcome::Repeated(_) => {
                return Err(EngineError::Invalid(
                    "this Idempotency-Key was already used with a different request".into(),
                ));
            }
            refused @ (StartOutcome::KeyLive(_) | StartOutcome::KeyUsed { .. }) => {
                return Err(key_refused(
                    &refused,
                    new.row.business_key.as_deref().unwrap_or_default(),
                    limits.key_reuse,
                ));
            }
        };
        Ok(Started { id, status, version })
    }
}

/// Identifies a start request for Idempotency-Key checks: the resolved version, the input and
/// the business key, hashed from their canonical JSON.
fn request_hash(version: i64, input: &Value, key: Option<&str>) -> String {
    let canonical = serde_json::json!({"version": version, "input": input, "key": key}).to_string();
    crate::digest::sha256_hex(canonical.as_bytes())
}

fn key_refused(outcome: &StartOutcome, key: &str, policy: trellis_model::KeyReuse) -> EngineError {
    let policy = policy.as_str();
    EngineError::Conflict(match outcome {
        StartOutcome::KeyLive(Some(id)) => format!(
            "instance {id} with key `{key}` has not finished; wait for it, cancel it, or set the workflow's key_reuse to terminate_if_running"
        ),
        StartOutcome::KeyUsed { id, status } => format!(
            "the workflow's key_reuse policy is {policy} and instance {id} already used key `{key}` ({status}); start with a new key"
        ),
        _ => format!("another instance with key `{key}` was live a moment ago; try again"),
    })
}
