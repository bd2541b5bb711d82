//! `approval` nodes: an attempt renders its question (`nodes/mod.rs`) and stores it here
//! before its wait is committed (`ask`); people decide through `Commands::decide_approval`
//! (`decide.rs`). Who closes an approval is settled in the store, under the approval's row
//! lock: the `required`-th approval, the first rejection, or the node's durable timeout moves
//! `approvals.status` from `open` once. The node's transition follows the close; it applies
//! only while the node waits on that attempt, so it happens exactly once, and a close a crash
//! left without its transition is finished by the sweep (`sweep.rs`).

mod decide;
mod sweep;

pub use decide::Decision;
pub use sweep::ApprovalSweep;

use super::effects::Detail;
use super::machine::Event;
use super::nodes::{NodeResult, Suspend};
use super::plan::{Plan, PlanNode};
use super::run::Runner;
use crate::store::{ApprovalRow, DecisionRow, NewApproval};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use trellis_model::api::ApprovalStatus;
use trellis_model::approval::ApprovalConfig;
use uuid::Uuid;

/// The longest title and description kept (a template may render far more).
const MAX_TITLE: usize = 500;
const MAX_DESCRIPTION: usize = 20_000;

impl Runner {
    /// Stores what attempt `attempt` of approval node `spec` asks, then lets it wait. Asking
    /// again for the same attempt (its run repeated) keeps the first question.
    pub(super) async fn ask_approval(
        &self,
        plan: &Plan,
        (instance, spec, attempt): (Uuid, &PlanNode, u32),
        context: &Value,
        (title, description): (String, Option<String>),
    ) -> NodeResult {
        let config: ApprovalConfig = match serde_json::from_value(spec.config.clone()) {
            Ok(config) => config,
            Err(e) => return NodeResult::Failed { error: format!("invalid config: {e}"), retryable: false },
        };
        let now = Utc::now();
        let new = NewApproval {
            id: Uuid::now_v7(),
            instance_id: instance,
            workflow_id: plan.workflow,
            node_id: spec.id.clone(),
            attempt: attempt as i32,
            title: clip(title, MAX_TITLE),
            description: description.map(|d| clip(d, MAX_DESCRIPTION)),
            required: config.required() as i32,
            allow_starter: config.allow_starter,
            form: config.form,
            assignees: config.assignees,
            started_by: context.pointer("/instance/started_by").and_then(Value::as_str).map(str::to_owned),
            created_at: now,
            due_at: due_at(now, spec.timeout_ms),
        };
        match self.approvals.create_approval(&new).await {
            Ok((id, _)) => {
                // Asked again (a repeated run): the first question's id; the alert's key is
                // the attempt's, so it is recorded once either way.
                self.alerts.approval_requested(plan, &NewApproval { id, ..new.clone() }).await;
                NodeResult::Suspend(Suspend::Approval { title: new.title, description: new.description })
            }
            Err(e) => NodeResult::Failed { error: format!("the approval could not be stored: {e}"), retryable: true },
        }
    }

    /// What the timeout of an approval node's attempt does: closes its approval as
    /// `timed_out` unless a decision closed it first, whose outcome the node then takes.
    pub(super) async fn approval_timeout(
        &self,
        instance: Uuid,
        (node, spec): (usize, &PlanNode),
        attempt: u32,
    ) -> anyhow::Result<(Event, Detail)> {
        let status = self.approvals.time_out_approval(instance, &spec.id, attempt as i32).await?;
        if let Some(closed @ (ApprovalStatus::Approved | ApprovalStatus::Rejected)) = status {
            if let Some(row) = self.approvals.approval_of_attempt(instance, &spec.id, attempt as i32).await? {
                let decisions = self.approvals.decisions_of(&[row.id]).await?;
                return Ok(closing(node, attempt, closed, &decisions));
            }
        }
        let ms = spec.timeout_ms.unwrap_or_default();
        let detail =
            Detail { error: Some(format!("the approval was not decided within {ms} ms")), ..Default::default() };
        Ok((Event::Failed { node, attempt, retryable: false, timed_out: true }, detail))
    }
}

/// The node's event when its approval closed as `closed` with `decisions`: it succeeds with
/// the decision and the decisions that counted (edges and branches act on `decision`).
pub(super) fn closing(node: usize, attempt: u32, closed: ApprovalStatus, decisions: &[DecisionRow]) -> (Event, Detail) {
    if closed == ApprovalStatus::TimedOut {
        let detail = Detail { error: Some("the approval was not decided in time".into()), ..Default::default() };
        return (Event::Failed { node, attempt, retryable: false, timed_out: true }, detail);
    }
    let output = json!({
        "decision": closed.as_str(),
        "decisions": decisions.iter().map(DecisionRow::view).collect::<Vec<_>>(),
    });
    // The decision is the node's outcome too: `when: "approved"` edges act on it.
    let outcome = Some(closed.as_str().to_owned());
    (Event::Succeeded { node, attempt, outcome }, Detail { output: Some(output), ..Default::default() })
}

/// An approval row's attempt, for committing its node's event.
pub(super) fn attempt_of(row: &ApprovalRow) -> u32 {
    row.attempt.max(0) as u32
}

fn clip(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// When an approval is due, from when it was asked and its node's timeout.
fn due_at(created: DateTime<Utc>, timeout_ms: Option<u64>) -> Option<DateTime<Utc>> {
    // As the node's timer reads it (`ms_duration` caps what no timer could wait for).
    timeout_ms.and_then(|ms| created.checked_add_signed(super::effects::ms_duration(ms)))
}
