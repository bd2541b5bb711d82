//! Commands on a running instance from outside: cancel it, or signal a waiting node; and what
//! every command on one instance shares (its snapshot, an operator's event committed, an
//! output handed in held to the caps), which `actions.rs` and `tasks.rs` call.

use super::commands::Commands;
use super::effects::Detail;
use super::error::EngineError;
use super::machine::Event;
use crate::store::{Snapshot, TransitionOutcome};
use serde_json::Value;
use std::sync::Arc;
use trellis_model::config::NodeKind;
use trellis_model::InstanceStatus;
use uuid::Uuid;

impl Commands {
    pub async fn cancel(self: &Arc<Self>, id: Uuid) -> Result<(), EngineError> {
        self.operator_event(id, Event::Cancel, |_| "the instance has already finished".into()).await
    }

    /// Completes a `wait_signal` node that is waiting, with `payload` as its output.
    pub async fn signal(self: &Arc<Self>, id: Uuid, node: &str, payload: Value) -> Result<(), EngineError> {
        refuse_nul(&payload, "the payload")?;
        let snapshot = self.snapshot(id).await?;
        let plan = self.plans.get(snapshot.instance.workflow_id, snapshot.instance.version).await?;
        let index =
            plan.index_of(node).ok_or_else(|| EngineError::NotFound(format!("the workflow has no node `{node}`")))?;
        if plan.nodes[index].kind != NodeKind::WaitSignal {
            return Err(EngineError::Conflict(format!(
                "node `{node}` is a {} node, not wait_signal",
                plan.nodes[index].kind
            )));
        }
        self.refuse_oversized(&snapshot, node, &payload)?;
        let attempt = snapshot.nodes.iter().find(|n| n.node_id == node).map_or(0, |n| n.attempts.max(0) as u32);
        let event = Event::Succeeded { node: index, attempt, outcome: None };
        let detail = Detail { output: Some(payload), ..Default::default() };
        match self.committer.commit(&plan, id, None, event, detail).await? {
            TransitionOutcome::Applied(_) => Ok(()),
            _ => Err(EngineError::Conflict(format!("node `{node}` is not waiting for a signal"))),
        }
    }

    /// Commits an operator's `event` (cancel, pause, resume); when it does not apply,
    /// explains why from the status it found.
    pub(super) async fn operator_event(
        self: &Arc<Self>,
        id: Uuid,
        event: Event,
        refused: impl Fn(InstanceStatus) -> String,
    ) -> Result<(), EngineError> {
        let snapshot = self.snapshot(id).await?;
        let plan = self.plans.get(snapshot.instance.workflow_id, snapshot.instance.version).await?;
        match self.committer.commit(&plan, id, None, event, Detail::default()).await? {
            TransitionOutcome::Applied(_) => Ok(()),
            _ => {
                // Read again: the status may have changed since the first read.
                match self.instances.get_instance(id).await? {
                    Some(now) => Err(EngineError::Conflict(refused(now.instance.status))),
                    None => Err(EngineError::NotFound(format!("no instance with id {id}"))),
                }
            }
        }
    }

    pub(super) async fn snapshot(&self, id: Uuid) -> Result<Snapshot, EngineError> {
        self.instances.get_instance(id).await?.ok_or_else(|| EngineError::NotFound(format!("no instance with id {id}")))
    }

    /// A node output handed in from outside (a signal's payload, a task's result) that is
    /// nested too deep (422) or over the caps (413) is refused rather than stored or turned
    /// into a failed node: the caller can still send one that fits.
    pub(super) fn refuse_oversized(&self, snapshot: &Snapshot, node: &str, output: &Value) -> Result<(), EngineError> {
        super::json::refuse_deep(
            output,
            trellis_model::nesting::MAX_JSON_DEPTH,
            &format!("the output of node `{node}`"),
        )?;
        let others = super::context::others_bytes(snapshot, node, None);
        self.output_caps.check(node, output, others, 0).map_err(EngineError::TooLarge)
    }
}

pub(super) fn refuse_nul(value: &Value, what: &str) -> Result<(), EngineError> {
    if super::json::contains_nul(value) {
        return Err(EngineError::Invalid(format!(
            "{what} contains U+0000 (a NUL character), which Trellis does not store"
        )));
    }
    Ok(())
}
