//! Sub-workflows: a `subworkflow` node's attempt starts a child instance through the normal
//! start path and waits (suspended, holding no worker). The child's finishing transition
//! writes a `child_done` work item on the parent (`effects::parent_wake`), which completes
//! the attempt here; an instance that ends early, or a `subworkflow` attempt that times out
//! or is lost, writes `cancel_children`, which cancels the children no attempt waits for.

use super::effects::Detail;
use super::error::EngineError;
use super::lineage::Lineage;
use super::machine::Event;
use super::nodes::{permanent, NodeResult, Suspend};
use super::results::make_storable;
use super::run::Runner;
use super::start_request::{ParentLink, StartRequest};
use crate::secrets::Redactor;
use crate::store::{ChildEnd, ChildRow};
use serde_json::Value;
use std::sync::Arc;
use trellis_model::config::{VersionRef, MAX_SUBWORKFLOW_DEPTH};
use trellis_model::trace::TraceParent;
use trellis_model::{InstanceStatus, NodeStatus};
use uuid::Uuid;

/// One attempt of a `subworkflow` node that wants its child started.
pub(super) struct ChildStart<'a> {
    pub parent: Uuid,
    pub node: &'a str,
    pub attempt: u32,
    /// The attempt's span, which the child's instance span hangs under.
    pub traceparent: Option<&'a str>,
    pub workflow: Uuid,
    pub version: VersionRef,
    /// The child's input as the attempt made it: redacted and cleaned of U+0000 on start.
    pub input: Value,
    /// For a `map` item: its index and attempt (many children serve one map attempt).
    pub item: Option<(usize, u32)>,
    /// The secrets the starting attempt used: none of their values reaches the child's row.
    pub redactor: &'a Redactor,
}

impl Runner {
    /// Starts (or finds, when this attempt is run again) the attempt's child instance.
    /// `Suspend(Child)` when it runs or is queued; a failure otherwise — retryable only for
    /// passing trouble (the database, the called workflow's instance limit).
    pub(super) async fn start_child(self: &Arc<Self>, c: ChildStart<'_>) -> NodeResult {
        match self.try_start_child(&c).await {
            Ok(_) => {
                NodeResult::Suspend(Suspend::Child { workflow: c.workflow, version: c.version, input: Value::Null })
            }
            Err(failed) => failed,
        }
    }

    pub(super) async fn try_start_child(self: &Arc<Self>, c: &ChildStart<'_>) -> Result<Uuid, NodeResult> {
        let transient = |e: &dyn std::fmt::Display| NodeResult::Failed {
            error: format!("could not start the child instance: {e}"),
            retryable: true,
        };
        let attempt = c.attempt as i32;
        // A redone attempt (its commit was lost to an outage) finds the child it started
        // (a map item's, by its idempotency key below).
        if c.item.is_none() {
            let children = self.instances.children(c.parent).await.map_err(|e| transient(&e))?;
            if let Some(child) = children.iter().find(|k| serves(k, c.node, attempt)) {
                return Ok(child.id);
            }
        }
        let parent = self.instances.get_instance(c.parent).await.map_err(|e| transient(&e))?;
        let Some(parent) = parent else { return Err(permanent("the parent instance no longer exists".into())) };
        let Some(lineage) = Lineage::of(&parent.instance).child() else {
            let root = super::lineage::root(&*self.instances, &parent.instance).await;
            return Err(permanent(format!(
                "sub-workflow depth limit ({MAX_SUBWORKFLOW_DEPTH}) exceeded: the chain of instances started by one \
                 another (sub-workflows and failure handlers) began at instance {root}"
            )));
        };
        let version = self.callee_version(c.workflow, c.version).await?;
        let mut input = c.input.clone();
        make_storable(&mut input, c.redactor);
        let request = StartRequest {
            version: Some(version),
            // Derived from the attempt's key, `{instance}:{node}:{attempt}`: two executions of
            // one attempt start one child.
            idempotency_key: Some(match c.item {
                None => format!("subworkflow:{}:{}:{}", c.parent, c.node, c.attempt),
                Some((index, item_attempt)) => {
                    format!("map:{}:{}:{}:{index}:{item_attempt}", c.parent, c.node, c.attempt)
                }
            }),
            trace_parent: c.traceparent.and_then(TraceParent::parse),
            parent: Some(ParentLink { instance: c.parent, node: c.node.to_owned(), attempt }),
            lineage,
            // Whoever started the parent started the child (an approval's `allow_starter`
            // reads it: a run does not escape the rule by calling the gated workflow).
            started_by: parent.instance.started_by.clone(),
            ..StartRequest::new(c.workflow, input)
        };
        match self.commands.start(request).await {
            Ok(started) => Ok(started.id),
            Err(
                e @ (EngineError::Store(_)
                | EngineError::Internal(_)
                | EngineError::Unavailable(_)
                | EngineError::Busy(_)
                | EngineError::LimitReached(_)
                | EngineError::RateLimited { .. }),
            ) => Err(transient(&e)),
            Err(e) => Err(permanent(format!("could not start the child instance: {e}"))),
        }
    }

    /// The version a child runs: `latest` is resolved now. A missing or archived workflow, or
    /// one without the version, is the node's permanent failure.
    async fn callee_version(&self, workflow: Uuid, version: VersionRef) -> Result<i64, NodeResult> {
        match super::callee::version_to_run(&*self.catalog, workflow, version, "the called workflow").await {
            Ok(resolved) => resolved.map_err(permanent),
            Err(e) => {
                Err(NodeResult::Failed { error: format!("could not read the called workflow: {e}"), retryable: true })
            }
        }
    }

    /// What a finished child brings its parent's attempt (see [`child_outcome`]); a child's
    /// output over the parent's caps fails the node instead, for good.
    pub(super) fn child_done(
        &self,
        id: &str,
        node: usize,
        attempt: u32,
        end: &ChildEnd,
        others_bytes: usize,
    ) -> (Event, Detail) {
        let (event, detail) = child_outcome(node, attempt, end);
        let Some(output) = &detail.output else { return (event, detail) };
        // The child's output is its instance's: its sinks' outputs (a map's holding its items') by node id.
        let room = trellis_model::nesting::INSTANCE_OUTPUT_WRAP + trellis_model::nesting::MAP_RESULTS_WRAP;
        match self.output_caps.check(id, output, others_bytes, room) {
            Ok(()) => (event, detail),
            Err(error) => (
                Event::Failed { node, attempt, retryable: false, timed_out: false },
                Detail { error: Some(format!("the child instance's output: {error}")), ..Default::default() },
            ),
        }
    }

    /// Cancels `instance`'s live children that no running attempt of it waits for (all of
    /// them once it has ended); theirs follow, as each canceled child does the same.
    pub(super) async fn cancel_children(self: &Arc<Self>, instance: Uuid) -> anyhow::Result<()> {
        let children = self.instances.children(instance).await?;
        let live: Vec<&ChildRow> = children.iter().filter(|c| !c.status.is_terminal()).collect();
        if live.is_empty() {
            return Ok(());
        }
        let parent = self.instances.get_instance(instance).await?;
        let waited_for = |child: &ChildRow| {
            parent.as_ref().is_some_and(|p| {
                !p.instance.status.is_terminal()
                    && p.nodes.iter().any(|n| {
                        matches!(n.status, NodeStatus::Running | NodeStatus::Waiting)
                            && serves(child, &n.node_id, n.attempts)
                    })
            })
        };
        for child in live.into_iter().filter(|c| !waited_for(c)) {
            match self.commands.cancel(child.id).await {
                Ok(()) | Err(EngineError::Conflict(_) | EngineError::NotFound(_)) => {}
                Err(e) => return Err(anyhow::anyhow!("canceling child instance {}: {e}", child.id)),
            }
        }
        Ok(())
    }
}

/// Whether `child` was started by attempt `attempt` of node `node`.
pub(super) fn serves(child: &ChildRow, node: &str, attempt: i32) -> bool {
    child.parent_node_id.as_deref() == Some(node) && child.parent_attempt == Some(attempt)
}

/// The event a finished child brings its parent's `subworkflow` attempt, from the end
/// `effects::parent_wake` wrote: success with the child's output, or a (retryable) failure
/// naming the child.
pub(super) fn child_outcome(node: usize, attempt: u32, end: &ChildEnd) -> (Event, Detail) {
    match end.status {
        InstanceStatus::Succeeded => {
            let output = end.output.clone().unwrap_or(Value::Null);
            (Event::Succeeded { node, attempt, outcome: None }, Detail { output: Some(output), ..Default::default() })
        }
        other => {
            let error = end.error.as_deref().unwrap_or("no error message");
            let failure = child_failure(&end.child.to_string(), Some(other), error);
            (
                Event::Failed { node, attempt, retryable: true, timed_out: false },
                Detail { error: Some(failure), ..Default::default() },
            )
        }
    }
}

/// Why a child that did not succeed fails the attempt (or map item) waiting for it.
pub(super) fn child_failure(child: &str, status: Option<InstanceStatus>, error: &str) -> String {
    match status {
        Some(InstanceStatus::Canceled) => format!("child instance {child} was canceled"),
        Some(InstanceStatus::TimedOut) => format!("child instance {child} timed out: {error}"),
        _ => format!("child instance {child} failed: {error}"),
    }
}

#[cfg(test)]
mod tests;
