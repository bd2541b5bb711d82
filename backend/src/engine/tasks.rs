//! The external worker protocol for `task` nodes: long-poll for a task, heartbeat its
//! lease, complete or fail it. Every call is fenced by the lease token; what a worker reports
//! is redacted like any attempt's result.

use super::commands::Commands;
use super::control::refuse_nul;
use super::error::EngineError;
use super::nodes::NodeResult;
use super::plan::Plan;
use super::results::{outcome, sanitized};
use crate::secrets::{Opened, Redactor, Unavailable};
use crate::store::{Fence, NodeAttempt, TransitionOutcome, Work};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

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

impl Commands {
    /// Long-polls `queue` for a task, for up to `wait`.
    pub async fn poll_task(&self, queue: &str, wait: Duration) -> Result<Option<TaskLease>, EngineError> {
        let deadline = tokio::time::Instant::now() + wait.min(MAX_POLL);
        loop {
            let token = Uuid::new_v4().simple().to_string();
            let now = Utc::now();
            let woken = self.wakes.tasks.notified();
            if let Some(item) = self.work.claim_task(queue, &token, now, now + self.workers.lease()).await? {
                match item.work {
                    Ok(Work::Task { attempt, input, .. }) => {
                        return Ok(Some(TaskLease {
                            id: item.id,
                            lease_token: token,
                            lease_expires_at: item.lease_expires_at.unwrap_or(now),
                            instance_id: item.instance_id,
                            node: attempt.node,
                            attempt: attempt.attempt,
                            input,
                        }))
                    }
                    // Left to its lease (a newer process may read it); the next one is tried.
                    other => {
                        tracing::error!(work = %item.id, instance = %item.instance_id, read = ?other, "a queued task does not read as one");
                        continue;
                    }
                }
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
        let (fence, ..) = self.task_fence(id, token).await?;
        let until = Utc::now() + self.workers.lease();
        if self.work.extend_lease(&fence, until).await? {
            Ok(until)
        } else {
            Err(stale_lease())
        }
    }

    pub async fn complete_task(self: &Arc<Self>, id: Uuid, token: &str, output: Value) -> Result<(), EngineError> {
        refuse_nul(&output, "the output")?;
        self.finish_task(id, token, NodeResult::Done { output, outcome: None }).await
    }

    pub async fn fail_task(
        self: &Arc<Self>,
        id: Uuid,
        token: &str,
        error: String,
        retryable: bool,
    ) -> Result<(), EngineError> {
        refuse_nul(&Value::String(error.clone()), "the error")?;
        self.finish_task(id, token, NodeResult::Failed { error, retryable }).await
    }

    /// Records a worker's result as the attempt's. It goes through the same redaction as a
    /// result the engine made itself (`results::sanitized`): the worker may know a secret its
    /// node references (its own copy of a credential; the task input it got carries
    /// `[secret:NAME]`, never the value) and echo it in an error, which would otherwise reach
    /// the node's row, the instance's error, failure groups, exports and alert bodies.
    async fn finish_task(self: &Arc<Self>, id: Uuid, token: &str, result: NodeResult) -> Result<(), EngineError> {
        let (fence, instance, at) = self.task_fence(id, token).await?;
        let snapshot = self.snapshot(instance).await?;
        let plan: Arc<Plan> = self.plans.get(snapshot.instance.workflow_id, snapshot.instance.version).await?;
        let node = plan.index_of(&at.node).ok_or_else(stale_lease)?;
        let spec = &plan.nodes[node];
        let result = sanitized(result, &self.redactor_of(&spec.secrets).await?);
        if let NodeResult::Done { output, .. } = &result {
            self.refuse_oversized(&snapshot, &spec.id, output)?;
        }
        let (event, detail) = outcome(result, node, at.number(), &spec.id);
        match self.committer.commit(&plan, instance, Some(&fence), event, detail).await? {
            TransitionOutcome::Fenced => Err(stale_lease()),
            _ => Ok(()),
        }
    }

    /// The redactor of the secrets `names` (a task node's references). A deleted secret has no
    /// value left to hide and is skipped; any other failure to open one refuses the worker's
    /// call (it may try again), so nothing is stored unredacted.
    async fn redactor_of(&self, names: &[String]) -> Result<Redactor, EngineError> {
        let mut opened = Opened::default();
        for name in names {
            match self.secrets.open_for_attempt(std::slice::from_ref(name)).await {
                Ok(one) => opened.values.extend(one.values),
                Err(Unavailable::Missing(_)) => {}
                Err(e) => return Err(EngineError::Unavailable(format!("the task's result was not recorded: {e}"))),
            }
        }
        Ok(opened.redactor())
    }

    /// The fence the task's live lease gives `token`, its instance and its attempt.
    async fn task_fence(&self, id: Uuid, token: &str) -> Result<(Fence, Uuid, NodeAttempt), EngineError> {
        let item = self.work.work_item(id).await?.ok_or_else(stale_lease)?;
        let live = item.lease_expires_at.is_some_and(|t| t > Utc::now());
        match (item.fence(), item.work) {
            (Some(fence), Ok(Work::Task { attempt, .. })) if fence.owner == token && live => {
                Ok((fence, item.instance_id, attempt))
            }
            _ => Err(stale_lease()),
        }
    }
}

fn stale_lease() -> EngineError {
    EngineError::Conflict(
        "the lease token is stale or unknown: the task was completed, or its lease expired and it was handed out again"
            .into(),
    )
}
