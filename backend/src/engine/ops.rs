//! What the API asks of the engine: start, cancel, signal, admission, and the external
//! worker protocol for `task` nodes.

use super::effects::{decide, kind, Detail};
use super::machine::Event;
use super::plan::Plan;
use super::trace::Tracer;
use super::Engine;
use crate::store::{
    Fence, InstanceRow, NewInstance, NodeRow, Snapshot, StartOutcome, StoreError, TransitionOutcome, WorkItem, Writes,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use std::sync::Arc;
use std::time::Duration;
use trellis_model::trace::TraceParent;
use trellis_model::{InstanceStatus, NodeStatus};
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    LimitReached(String),
    #[error("{0}")]
    TooLarge(String),
    /// Input a client can fix.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

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
}

impl StartRequest {
    pub fn new(workflow: Uuid, input: Value) -> StartRequest {
        StartRequest { workflow, version: None, input, key: None, idempotency_key: None, trace_parent: None }
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

/// A task handed to an external worker.
#[derive(Debug, Clone)]
pub struct TaskLease {
    pub id: Uuid,
    pub lease_token: String,
    pub lease_expires_at: DateTime<Utc>,
    pub instance_id: Uuid,
    pub node: String,
    pub attempt: i32,
    pub input: Value,
}

const MAX_POLL: Duration = Duration::from_secs(30);

impl Engine {
    /// Starts an instance. With an `idempotency_key`, repeating the same request returns the
    /// first answer and creates nothing; the same key with a different request is refused.
    pub async fn start(self: &Arc<Self>, request: StartRequest) -> Result<Started, EngineError> {
        let StartRequest { workflow, version, input, key, idempotency_key, trace_parent } = request;
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
        // The workflow's concurrency limit is that of its latest version.
        let limits = self.plan(workflow, latest).await?;
        let now = Utc::now();
        let row = InstanceRow {
            id: Uuid::now_v7(),
            workflow_id: workflow,
            version,
            status: InstanceStatus::Queued.as_str().into(),
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
        };
        let pending = NodeStatus::Pending.as_str();
        let nodes: Vec<NodeRow> =
            plan.nodes.iter().enumerate().map(|(i, n)| NodeRow::fresh(n.id.clone(), i as i32, pending)).collect();
        let tracer = Tracer { plan: &plan, instance: &row, now };
        let (created_events, queued_events) = (tracer.created(false), tracer.created(true).split_off(1));
        let fresh = Snapshot { instance: row.clone(), nodes: nodes.clone() };
        let reservation = self.reserve();
        let mut on_admit = decide(&plan, &fresh, Event::Start, &Detail::default(), now, 0.0);
        reservation.lease_runs(&mut on_admit, &self.owner);
        let id = row.id;
        let request_hash = request_hash(version, &row.input.0, row.business_key.as_deref());
        let idempotency = idempotency_key.map(|k| (k, request_hash.clone()));
        let new = NewInstance {
            row,
            nodes,
            limit: limits.instance_limit,
            reject_over_limit: limits.reject_over_limit,
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
                self.after_commit(&plan, id, &on_admit, reservation).await;
                InstanceStatus::Running
            }
            StartOutcome::Queued => {
                self.bus.committed(id, workflow, 1, &[created_events, queued_events].concat());
                InstanceStatus::Queued
            }
            StartOutcome::Rejected => {
                let limit = limits.instance_limit.unwrap_or_default();
                return Err(EngineError::LimitReached(format!(
                    "the workflow already runs its limit of {limit} instances"
                )));
            }
            StartOutcome::Repeated(first) if first.request_hash == request_hash => {
                let status = InstanceStatus::parse(&first.status).unwrap_or(InstanceStatus::Queued);
                return Ok(Started { id: first.instance_id, status, version: first.version });
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

    pub async fn cancel(self: &Arc<Self>, id: Uuid) -> Result<(), EngineError> {
        self.operator_event(id, Event::Cancel, |_| "the instance has already finished".into()).await
    }

    /// Completes a `wait_signal` node that is waiting, with `payload` as its output.
    pub async fn signal(self: &Arc<Self>, id: Uuid, node: &str, payload: Value) -> Result<(), EngineError> {
        refuse_nul(&payload, "the payload")?;
        let snapshot = self.snapshot(id).await?;
        let plan = self.plan(snapshot.instance.workflow_id, snapshot.instance.version).await?;
        let index =
            plan.index_of(node).ok_or_else(|| EngineError::NotFound(format!("the workflow has no node `{node}`")))?;
        if plan.nodes[index].kind != "wait_signal" {
            return Err(EngineError::Conflict(format!(
                "node `{node}` is a {} node, not wait_signal",
                plan.nodes[index].kind
            )));
        }
        self.refuse_oversized(&snapshot, node, &payload)?;
        let attempt = snapshot.nodes.iter().find(|n| n.node_id == node).map_or(0, |n| n.attempts.max(0) as u32);
        let event = Event::Succeeded { node: index, attempt, outcome: None };
        let detail = Detail { output: Some(payload), ..Default::default() };
        match self.commit(&plan, id, None, event, detail).await? {
            TransitionOutcome::Applied(_) => Ok(()),
            _ => Err(EngineError::Conflict(format!("node `{node}` is not waiting for a signal"))),
        }
    }

    pub(super) async fn snapshot(&self, id: Uuid) -> Result<Snapshot, EngineError> {
        self.store.get_instance(id).await?.ok_or_else(|| EngineError::NotFound(format!("no instance with id {id}")))
    }

    /// Admits queued instances of every workflow into free slots (a periodic sweep that
    /// also covers a process that died between finishing an instance and admitting).
    pub(super) async fn admit_everywhere(&self) {
        match self.store.workflows_with_queued().await {
            Ok(workflows) => {
                for workflow in workflows {
                    self.admit(workflow).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "admission sweep failed"),
        }
    }

    pub(super) async fn admit(&self, workflow: Uuid) {
        if let Err(e) = self.try_admit(workflow).await {
            tracing::warn!(error = %e, %workflow, "admitting queued instances failed");
        }
    }

    async fn try_admit(&self, workflow: Uuid) -> anyhow::Result<()> {
        let Some(record) = self.store.get_workflow(workflow).await? else { return Ok(()) };
        let Some(latest) = record.latest_version else { return Ok(()) };
        // Admission decides inside the store's transaction, without awaiting: load every
        // version's plan first.
        let mut plans = std::collections::HashMap::new();
        for v in 1..=latest {
            plans.insert(v, self.plan(workflow, v).await?);
        }
        let limit = plans[&latest].instance_limit;
        let now = Utc::now();
        let from_queue = Detail { from_queue: true, ..Detail::default() };
        let start = |s: &Snapshot| match plans.get(&s.instance.version) {
            Some(plan) => decide(plan, s, Event::Start, &from_queue, now, 0.0),
            None => Writes::default(),
        };
        let admitted = self.store.admit_queued(workflow, limit, &start).await?;
        for (instance, writes) in &admitted {
            if let Some(first) = writes.first_seq {
                self.bus.committed(*instance, workflow, first, &writes.events);
            }
        }
        if !admitted.is_empty() {
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Long-polls `queue` for a task, for up to `wait`.
    pub async fn poll_task(&self, queue: &str, wait: Duration) -> Result<Option<TaskLease>, EngineError> {
        let deadline = tokio::time::Instant::now() + wait.min(MAX_POLL);
        loop {
            let token = Uuid::new_v4().simple().to_string();
            let now = Utc::now();
            let woken = self.task_wake.notified();
            if let Some(item) = self.store.claim_task(queue, &token, now, now + self.lease()).await? {
                return Ok(Some(TaskLease {
                    id: item.id,
                    lease_token: token,
                    lease_expires_at: item.lease_expires_at.unwrap_or(now),
                    instance_id: item.instance_id,
                    node: item.node_id.unwrap_or_default(),
                    attempt: item.attempt.unwrap_or(0),
                    input: item.payload.map(|p| p.0).unwrap_or(Value::Null),
                }));
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            // Woken by a new task here; re-checked periodically for tasks made elsewhere.
            let _ = tokio::time::timeout(left.min(Duration::from_millis(200)), woken).await;
        }
    }

    pub async fn heartbeat_task(&self, id: Uuid, token: &str) -> Result<DateTime<Utc>, EngineError> {
        let (fence, _) = self.task_fence(id, token).await?;
        let until = Utc::now() + self.lease();
        if self.store.extend_lease(&fence, until).await? {
            Ok(until)
        } else {
            Err(stale_lease())
        }
    }

    pub async fn complete_task(self: &Arc<Self>, id: Uuid, token: &str, output: Value) -> Result<(), EngineError> {
        refuse_nul(&output, "the output")?;
        let detail = Detail { output: Some(output), ..Default::default() };
        self.finish_task(id, token, detail, |node, attempt| Event::Succeeded { node, attempt, outcome: None }).await
    }

    pub async fn fail_task(
        self: &Arc<Self>,
        id: Uuid,
        token: &str,
        error: String,
        retryable: bool,
    ) -> Result<(), EngineError> {
        refuse_nul(&Value::String(error.clone()), "the error")?;
        let detail = Detail { error: Some(error), ..Default::default() };
        self.finish_task(id, token, detail, |node, attempt| Event::Failed {
            node,
            attempt,
            retryable,
            timed_out: false,
        })
        .await
    }

    async fn finish_task(
        self: &Arc<Self>,
        id: Uuid,
        token: &str,
        detail: Detail,
        event: impl Fn(usize, u32) -> Event,
    ) -> Result<(), EngineError> {
        let (fence, item) = self.task_fence(id, token).await?;
        let snapshot = self.snapshot(item.instance_id).await?;
        let plan: Arc<Plan> = self.plan(snapshot.instance.workflow_id, snapshot.instance.version).await?;
        let node = item.node_id.as_deref().and_then(|n| plan.index_of(n)).ok_or_else(stale_lease)?;
        if let Some(output) = &detail.output {
            self.refuse_oversized(&snapshot, &plan.nodes[node].id, output)?;
        }
        let attempt = item.attempt.unwrap_or(0).max(0) as u32;
        match self.commit(&plan, item.instance_id, Some(&fence), event(node, attempt), detail).await? {
            TransitionOutcome::Fenced => Err(stale_lease()),
            _ => Ok(()),
        }
    }

    /// A node output handed in from outside (a signal's payload, a task's result) that is
    /// over the caps is refused (413) rather than stored or turned into a failed node: the
    /// caller can still send one that fits.
    fn refuse_oversized(&self, snapshot: &Snapshot, node: &str, output: &Value) -> Result<(), EngineError> {
        let others =
            snapshot.nodes.iter().filter(|n| n.node_id != node).filter_map(|n| n.output.as_ref().map(|o| &o.0));
        self.config.output_caps.check(node, output, others).map_err(EngineError::TooLarge)
    }

    /// The task's work item and the fence its live lease gives `token`.
    async fn task_fence(&self, id: Uuid, token: &str) -> Result<(Fence, WorkItem), EngineError> {
        let item = self.store.work_item(id).await?.filter(|w| w.kind == kind::TASK).ok_or_else(stale_lease)?;
        let live = item.lease_expires_at.is_some_and(|t| t > Utc::now());
        match item.fence() {
            Some(fence) if fence.owner == token && live => Ok((fence, item)),
            _ => Err(stale_lease()),
        }
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

fn refuse_nul(value: &Value, what: &str) -> Result<(), EngineError> {
    if super::json::contains_nul(value) {
        return Err(EngineError::Invalid(format!(
            "{what} contains U+0000 (a NUL character), which Trellis does not store"
        )));
    }
    Ok(())
}

fn stale_lease() -> EngineError {
    EngineError::Conflict(
        "the lease token is stale or unknown: the task was completed, or its lease expired and it was handed out again"
            .into(),
    )
}
