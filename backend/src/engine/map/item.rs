//! One item of a map: its attempts (the map node's retry policy and timeout apply to each
//! item), run in this process as the map attempt's own work — the inner node through the
//! same runtime as any node (so through the sandbox), a workflow as a child instance.

use super::super::children::{child_failure, ChildStart};
use super::super::nodes::{permanent, Attempt, NodeResult, Suspend};
use super::super::plan::{Plan, PlanNode};
use super::super::results::sanitized;
use super::super::run::Runner;
use super::board::{pending, ItemEnd};
use super::budget::Budget;
use super::flush::Update;
use crate::secrets::{Opened, Redactor};
use crate::store::{MapItemRow, Snapshot};
use chrono::Utc;
use serde_json::{json, Value};
use sqlx::types::Json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use trellis_model::config::VersionRef;
use trellis_model::{InstanceStatus, NodeStatus};
use uuid::Uuid;

/// How often a map looks at the children it waits for when no end was announced here.
const CHILD_POLL: Duration = Duration::from_secs(1);

/// What each item runs.
pub(super) enum Inner {
    /// The inner node, as a plan node of its own type (the map's id, secrets and timeout).
    Node(PlanNode),
    /// A child instance of this workflow, with the item as its input.
    Workflow { workflow: Uuid, version: VersionRef },
}

impl Inner {
    pub fn type_name(&self) -> &'static str {
        match self {
            Inner::Node(spec) => spec.kind.as_str(),
            Inner::Workflow { .. } => "subworkflow",
        }
    }
}

/// What every item of one map attempt shares.
pub(super) struct Job<'a> {
    pub engine: &'a Arc<Runner>,
    pub plan: &'a Plan,
    pub node: usize,
    pub instance: Uuid,
    /// The map node's attempt.
    pub attempt: u32,
    pub inner: Inner,
    /// The map attempt's expression context; each item adds `item` and `index`.
    pub base: Value,
    /// The secrets the map attempt opened, for the inner node's own evaluation.
    pub secrets: &'a Opened,
    /// Their redactor: nothing an item stores (its row, its child's input) holds their values.
    pub redactor: Redactor,
    /// The room the map's results have left.
    pub budget: Budget,
    pub traceparent: Option<String>,
    pub updates: mpsc::UnboundedSender<Update>,
}

impl Job<'_> {
    /// Runs item `idx` until it succeeds or its attempts are spent; `prior`: attempts an
    /// earlier map attempt made (numbering goes on from there).
    pub async fn run_item(&self, idx: usize, item: &Value, digest: &str, prior: i32) -> (usize, ItemEnd) {
        let budget = self.plan.max_attempts(self.node);
        let started = Utc::now();
        let mut row =
            MapItemRow { status: NodeStatus::Running, started_at: Some(started), ..pending(idx, digest, prior) };
        let (mut result, mut timed_out);
        let mut tries = 0;
        loop {
            tries += 1;
            row.attempts += 1;
            row.child_id = None;
            self.send(&row);
            // Under a shared limit, each try waits here for its place.
            let spec = &self.plan.nodes[self.node];
            let place = self.engine.item_place(spec, self.instance, self.attempt, idx).await;
            (result, timed_out) = match &place {
                Ok(_) => self.attempt(idx, item, row.attempts as u32, &mut row.child_id).await,
                Err(e) => (
                    NodeResult::Failed { error: format!("asking the shared limit failed: {e}"), retryable: true },
                    false,
                ),
            };
            let busy_for = match &result {
                NodeResult::Busy { retry_after, .. } => Some(*retry_after),
                _ => None,
            };
            let holder = place.ok().and_then(|(holder, _)| holder);
            if self.engine.item_done(holder.as_ref(), busy_for).await {
                // Told to wait under its limit: the pause is over; the same try again.
                tries -= 1;
                row.attempts -= 1;
                continue;
            }
            let retryable = matches!(result, NodeResult::Failed { retryable: true, .. } | NodeResult::Busy { .. });
            let retry = retryable && tries < budget;
            if !retry {
                break;
            }
            tokio::time::sleep(self.backoff(tries + 1)).await;
        }
        let end = self.end(idx, result, timed_out);
        row.status = end.status;
        row.output = end.output.clone().map(Json);
        row.error = end.error.clone();
        row.ended_at = Some(Utc::now());
        self.send(&row);
        (idx, end)
    }

    fn send(&self, row: &MapItemRow) {
        let _ = self.updates.send(Update { row: row.clone(), item_type: self.inner.type_name() });
    }

    /// The wait before try `next` (2, 3, ...): the map node's backoff, jittered as a node's.
    fn backoff(&self, next: u32) -> Duration {
        let ms = self.plan.backoff_ms(self.node, next);
        Duration::from_millis(super::super::effects::equal_jitter(ms, rand::random::<f64>()))
    }

    /// How item `idx` ended, its output redacted and taken from the map's budget (an output
    /// over it is dropped here, so neither its row nor the map's results hold it).
    fn end(&self, idx: usize, result: NodeResult, timed_out: bool) -> ItemEnd {
        let result = match sanitized(result, &self.redactor) {
            NodeResult::Done { output, .. } => match self.budget.take(idx, &output) {
                Ok(()) => NodeResult::Done { output, outcome: None },
                Err(error) => permanent(error),
            },
            other => other,
        };
        match result {
            NodeResult::Done { output, .. } => {
                ItemEnd { status: NodeStatus::Succeeded, output: Some(output), error: None }
            }
            NodeResult::Failed { error, .. } | NodeResult::Busy { error, .. } => {
                let status = if timed_out { NodeStatus::TimedOut } else { NodeStatus::Failed };
                ItemEnd { status, output: None, error: Some(error) }
            }
            NodeResult::Suspend(_) => ItemEnd {
                status: NodeStatus::Failed,
                output: None,
                error: Some("the item's node waited for something a map item cannot wait for".into()),
            },
        }
    }

    /// One try, within the map node's timeout. `child`: the child instance it started.
    async fn attempt(&self, idx: usize, item: &Value, n: u32, child: &mut Option<Uuid>) -> (NodeResult, bool) {
        let timeout = self.plan.nodes[self.node].timeout_ms;
        let work = async {
            match &self.inner {
                Inner::Node(spec) => self.run_inner(spec, idx, item, n, child).await,
                Inner::Workflow { workflow, version } => {
                    self.run_child(idx, n, (*workflow, *version), item.clone(), child).await
                }
            }
        };
        let Some(ms) = timeout else { return (work.await, false) };
        match tokio::time::timeout(Duration::from_millis(ms), work).await {
            Ok(result) => (result, false),
            Err(_) => {
                if let Some(id) = *child {
                    let _ = self.engine.commands.cancel(id).await;
                }
                (NodeResult::Failed { error: format!("timed out after {ms} ms"), retryable: true }, true)
            }
        }
    }

    async fn run_inner(
        &self,
        spec: &PlanNode,
        idx: usize,
        item: &Value,
        n: u32,
        child: &mut Option<Uuid>,
    ) -> NodeResult {
        let mut context = self.base.clone();
        if let Value::Object(roots) = &mut context {
            roots.insert("item".into(), item.clone());
            roots.insert("index".into(), json!(idx));
        }
        let run = Attempt {
            node: spec,
            attempt: n,
            idempotency_key: format!("{}:{}[{idx}]:{n}", self.instance, spec.id),
            traceparent: self.traceparent.clone(),
            context,
            now: Utc::now(),
            secrets: self.secrets,
        };
        match self.engine.runtime.run_logged(&run).await.0 {
            NodeResult::Suspend(Suspend::Until(until)) => {
                tokio::time::sleep((until - Utc::now()).to_std().unwrap_or_default()).await;
                NodeResult::Done { output: json!({"resumed_at": Utc::now()}), outcome: None }
            }
            NodeResult::Suspend(Suspend::Child { workflow, version, input }) => {
                self.run_child(idx, n, (workflow, version), input, child).await
            }
            NodeResult::Suspend(Suspend::Signal | Suspend::Task { .. }) => {
                permanent("a map item cannot wait for a signal or an external task".into())
            }
            other => other,
        }
    }

    /// Starts the item's child instance (once per item attempt, whoever runs it) and waits
    /// for it to end.
    async fn run_child(
        &self,
        idx: usize,
        n: u32,
        (workflow, version): (Uuid, VersionRef),
        input: Value,
        child: &mut Option<Uuid>,
    ) -> NodeResult {
        let node = &self.plan.nodes[self.node].id;
        let start = ChildStart {
            parent: self.instance,
            node,
            attempt: self.attempt,
            traceparent: self.traceparent.as_deref(),
            workflow,
            version,
            input,
            item: Some((idx, n)),
            redactor: &self.redactor,
        };
        let id = match self.engine.try_start_child(&start).await {
            Ok(id) => id,
            Err(failed) => return failed,
        };
        *child = Some(id);
        loop {
            let ended = self.engine.wakes.map_children.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            match self.engine.instances.get_instance(id).await {
                Ok(Some(snapshot)) if snapshot.instance.status.is_terminal() => return child_result(&snapshot),
                Ok(None) => return permanent(format!("child instance {id} no longer exists")),
                _ => {}
            }
            tokio::select! {
                _ = ended => {}
                _ = tokio::time::sleep(CHILD_POLL) => {}
            }
        }
    }
}

/// What a finished child gives its item: its output, or a failure naming it (retried per
/// the map node's policy, as a `subworkflow` node's is).
fn child_result(child: &Snapshot) -> NodeResult {
    let instance = &child.instance;
    if instance.status == InstanceStatus::Succeeded {
        let output = instance.output.as_ref().map(|o| o.0.clone()).unwrap_or(Value::Null);
        return NodeResult::Done { output, outcome: None };
    }
    let error = instance.error.as_deref().unwrap_or("no error message");
    let error = child_failure(&instance.id.to_string(), Some(instance.status), error);
    NodeResult::Failed { error, retryable: true }
}
