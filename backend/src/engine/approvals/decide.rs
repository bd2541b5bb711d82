//! A person's decision on an approval: the rules that say who may decide and what they may
//! answer, then the store's count under the approval's lock, then — when it closed the
//! approval — the node's event.

use super::super::commands::Commands;
use super::super::error::EngineError;
use super::closing;
use crate::store::{ApprovalRow, Decided, DecisionRow, Person, Refusal};
use chrono::Utc;
use serde_json::Value;
use sqlx::types::Json;
use std::sync::Arc;
use trellis_model::api::{ApprovalStatus, DecisionRequest, Verdict, MAX_COMMENT_BYTES};
use uuid::Uuid;

/// The largest form answer kept, as JSON text.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// What a decision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Counted; more are needed.
    Counted,
    /// It closed the approval so.
    Closed(ApprovalStatus),
}

impl Commands {
    /// Records `person`'s decision on approval `id`; closes it and moves its node on when it
    /// is the first rejection or the `required`-th approval.
    pub async fn decide_approval(
        self: &Arc<Self>,
        id: Uuid,
        person: &Person,
        request: DecisionRequest,
    ) -> Result<Decision, EngineError> {
        let row = self.approvals.get_approval(id).await?.ok_or_else(|| not_found(id))?;
        may_decide(&row, person)?;
        // A repeat is answered as one before its answer is judged.
        let earlier = self.approvals.decisions_of(&[id]).await?;
        if earlier.iter().any(|d| d.username == person.name) {
            return Err(repeated());
        }
        if let Some(comment) = &request.comment {
            if comment.len() > MAX_COMMENT_BYTES {
                return Err(EngineError::TooLarge(format!(
                    "the comment is {} bytes; at most {MAX_COMMENT_BYTES} are kept",
                    comment.len()
                )));
            }
            super::super::control::refuse_nul(&Value::String(comment.clone()), "the comment")?;
        }
        let response = checked_response(&row, request.decision, request.response)?;
        let decision = DecisionRow {
            approval_id: id,
            username: person.name.clone(),
            decision: request.decision.past().to_owned(),
            response: response.map(Json),
            comment: request.comment.filter(|c| !c.trim().is_empty()),
            decided_at: Utc::now(),
        };
        self.refuse_oversized_output(&row, &earlier, &decision).await?;
        match self.approvals.decide(&decision).await? {
            Decided::Counted => Ok(Decision::Counted),
            Decided::Closed(closed) => {
                // The close is durable: if its node's event cannot be committed now, the
                // sweep commits it, and the decision stands either way.
                if let Err(e) = self.close_node(&row, closed).await {
                    tracing::warn!(error = %e, approval = %id, "moving a closed approval's node on failed; the sweep will");
                }
                Ok(Decision::Closed(closed))
            }
            Decided::Repeated => Err(repeated()),
            Decided::NotOpen(status) => Err(closed_already(status)),
            Decided::NotFound => Err(not_found(id)),
        }
    }

    /// Refuses a decision whose closing output (the decisions so far and this one) would break
    /// the caps on what a node and an instance store (413), or nest too deep (422): refused
    /// now, while the decider can shorten it, rather than failing the node later.
    async fn refuse_oversized_output(
        &self,
        row: &ApprovalRow,
        earlier: &[DecisionRow],
        decision: &DecisionRow,
    ) -> Result<(), EngineError> {
        let decisions: Vec<DecisionRow> = earlier.iter().cloned().chain([decision.clone()]).collect();
        let (_, detail) = closing(0, 1, ApprovalStatus::Approved, &decisions);
        let output = detail.output.unwrap_or_default();
        let snapshot = self.snapshot(row.instance_id).await?;
        self.refuse_oversized(&snapshot, &row.node_id, &output)
    }

    /// Moves an approval's node on as its close says. It applies only while the node waits on
    /// the approval's attempt: a second call (the sweep, a timeout that lost) changes nothing.
    pub(in crate::engine) async fn close_node(&self, row: &ApprovalRow, closed: ApprovalStatus) -> anyhow::Result<()> {
        let snapshot = self.snapshot(row.instance_id).await?;
        let plan = self.plans.get(snapshot.instance.workflow_id, snapshot.instance.version).await?;
        let Some(node) = plan.index_of(&row.node_id) else { return Ok(()) };
        let decisions = self.approvals.decisions_of(&[row.id]).await?;
        let (event, detail) = closing(node, super::attempt_of(row), closed, &decisions);
        self.committer.commit(&plan, row.instance_id, None, event, detail).await?;
        Ok(())
    }
}

/// Whether `person` may decide `row` now: it is open, they are an assignee, and they did not
/// start its run (unless its node allows the starter).
fn may_decide(row: &ApprovalRow, person: &Person) -> Result<(), EngineError> {
    match row.refusal(person) {
        None => Ok(()),
        Some(Refusal::NotOpen(status)) => Err(closed_already(status)),
        Some(Refusal::NotAssignee) => {
            Err(EngineError::Forbidden(format!("you ({}) are not one of this approval's assignees", person.name)))
        }
        Some(Refusal::Starter) => Err(EngineError::Forbidden(
            "you started this run, and this approval does not let its starter decide (allow_starter)".into(),
        )),
    }
}

/// The answer, held to a size and to the approval's form (each violation at its path). Saying
/// no needs no form filled in, but an answer given with a rejection is held to it all the same.
fn checked_response(
    row: &ApprovalRow,
    verdict: Verdict,
    response: Option<Value>,
) -> Result<Option<Value>, EngineError> {
    if let Some(value) = &response {
        super::super::control::refuse_nul(value, "the response")?;
        super::super::json::refuse_deep(value, trellis_model::nesting::MAX_JSON_DEPTH, "the response")?;
        let size = serde_json::to_string(value).map_or(0, |s| s.len());
        if size > MAX_RESPONSE_BYTES {
            return Err(EngineError::TooLarge(format!(
                "the response is {size} bytes; at most {MAX_RESPONSE_BYTES} are kept"
            )));
        }
    }
    let answered = verdict == Verdict::Approve || response.is_some();
    let Some(form) = row.form.as_ref().map(|f| &f.0).filter(|_| answered) else {
        return Ok(response);
    };
    let validator = super::super::input_schema::compile(form)
        .map_err(|why| EngineError::Invalid(format!("the approval's form is not a usable JSON Schema: {why}")))?;
    let answer = response.clone().unwrap_or(Value::Object(Default::default()));
    let violations = super::super::input_schema::violations(&validator, &answer);
    if violations.is_empty() {
        return Ok(Some(answer));
    }
    let listed: Vec<&str> = violations.listed.iter().map(|i| i.message.as_str()).collect();
    let detail = format!("the response does not match the approval's form: {}", listed.join("; "));
    let errors = violations
        .listed
        .into_iter()
        .map(|mut issue| {
            issue.code = "form".into();
            issue
        })
        .collect();
    Err(EngineError::InputRejected { detail, errors })
}

fn closed_already(status: ApprovalStatus) -> EngineError {
    let how = match status {
        ApprovalStatus::Canceled => "closed: its run no longer waits for it".to_owned(),
        other => format!("already {}", other.as_str().replace('_', " ")),
    };
    EngineError::Conflict(format!("the approval is {how}"))
}

fn repeated() -> EngineError {
    EngineError::Conflict("you have already decided this approval".into())
}

fn not_found(id: Uuid) -> EngineError {
    EngineError::NotFound(format!("no approval with id {id}"))
}
