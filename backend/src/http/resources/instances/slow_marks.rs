//! Marks an instance's running nodes slow (`crate::slow`): each node with a threshold shows
//! it (`slow_after_ms`, `slow_basis`), and `slow` when it has run past it.

use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use crate::store::InstanceRow;
use trellis_model::api::InstanceDetail;
use trellis_model::NodeStatus;

/// Whether a node in this status is still at work (a `delay` or `wait_signal` node waits).
fn at_work(status: NodeStatus) -> bool {
    matches!(status, NodeStatus::Running | NodeStatus::Waiting)
}

pub(super) async fn add(state: &AppState, row: &InstanceRow, shown: &mut InstanceDetail) -> ApiResult<()> {
    if !shown.nodes.iter().any(|n| at_work(n.status)) {
        return Ok(());
    }
    let thresholds = state.store.slow_thresholds(row.workflow_id, row.version).await?;
    let now = chrono::Utc::now();
    for node in shown.nodes.iter_mut().filter(|n| at_work(n.status)) {
        let Some(threshold) = thresholds.iter().find(|t| t.node_id == node.id) else { continue };
        node.slow_after_ms = Some(threshold.threshold_ms);
        node.slow_basis = Some(threshold.basis.clone());
        node.slow = node.started_at.is_some_and(|started| crate::slow::is_past(started, threshold.threshold_ms, now));
    }
    Ok(())
}
