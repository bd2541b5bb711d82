//! An instance id a `debounce` burst gave out, before the burst ends and the instance is made.

use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use trellis_model::api::{HeldBy, InstanceDetail, InstanceSummary};
use trellis_model::InstanceStatus;

/// A burst still gathering starts, shown as the queued instance it becomes: the last start's
/// input, no nodes yet, held by the debounce until it is due.
pub(super) async fn gathering(state: &AppState, burst: &crate::store::DebounceRow) -> ApiResult<InstanceDetail> {
    let workflow = state.store.get_workflow(burst.workflow_id).await?;
    let summary = InstanceSummary {
        id: burst.instance_id.to_string(),
        workflow_id: burst.workflow_id.to_string(),
        version: workflow.as_ref().and_then(|w| w.latest_version).unwrap_or(1),
        workflow_name: workflow.map(|w| w.name),
        status: InstanceStatus::Queued,
        key: None,
        error: None,
        created_at: burst.first_at,
        started_at: None,
        ended_at: None,
        started_by: None,
    };
    let held_by = HeldBy {
        node: None,
        kind: "debounce".into(),
        name: None,
        key: serde_json::from_str(&burst.key).ok(),
        position: None,
        until: Some(burst.due_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    };
    Ok(InstanceDetail {
        summary,
        input: burst.input.0.clone(),
        output: None,
        nodes: Vec::new(),
        parent: None,
        failure_handler: None,
        handles_failure_of: None,
        concurrency_key: None,
        held_by: Some(held_by),
    })
}
