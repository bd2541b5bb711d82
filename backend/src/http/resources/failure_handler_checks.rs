//! The publish-time checks of `settings.on_failure` that need the store, beside the model's
//! validator: the handler workflow must exist, not be archived and have the version it runs;
//! and it may not be the workflow itself. Cycles through handlers (A's handler is B, B's is A;
//! or B calls A) are `cycles.rs`'s to find.

use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use trellis_model::config::VersionRef;
use trellis_model::{Definition, Issue};
use uuid::Uuid;

pub(super) const AT: &str = "settings.on_failure.workflow";

/// What is wrong with the failure handler `definition` (of workflow `own`) names.
pub async fn issues(state: &AppState, own: Uuid, definition: &Definition) -> ApiResult<Vec<Issue>> {
    // A malformed id is the model validator's to report.
    let Some((handler, version)) = handler_of(definition).into_iter().next() else { return Ok(Vec::new()) };
    let issue = |code: &str, message: String| Issue::new(code, message).path(AT);
    if handler == own {
        let message = "a workflow cannot be its own failure handler; pick another workflow".to_owned();
        return Ok(vec![issue("failure_handler_cycle", message)]);
    }
    let Some(record) = state.store.get_workflow(handler).await? else {
        return Ok(vec![issue("unknown_workflow", format!("the failure handler: no workflow with id {handler}"))]);
    };
    let Err(problems) = crate::engine::callee::resolve(&record, version) else { return Ok(Vec::new()) };
    let callee = format!("the failure handler `{}`", record.name);
    Ok(problems.into_iter().map(|p| issue(p.code(), p.describe(&callee))).collect())
}

/// The workflow `definition`'s failures start, and its version, when well-formed.
pub(super) fn handler_of(definition: &Definition) -> Vec<(Uuid, VersionRef)> {
    let handler = definition.settings.on_failure.as_ref();
    handler.and_then(|h| Some((h.workflow.trim().parse().ok()?, h.version))).into_iter().collect()
}
