//! Each `approval` node's latest approval on the instance (`NodeView::approval`), so the run
//! view links a waiting node to the page where it is decided.

use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use trellis_model::api::InstanceDetail;
use uuid::Uuid;

pub(super) async fn add(state: &AppState, instance: Uuid, shown: &mut InstanceDetail) -> ApiResult<()> {
    for (node, approval) in state.store.approvals_of_instance(instance).await? {
        if let Some(view) = shown.nodes.iter_mut().find(|n| n.id == node) {
            view.approval = Some(approval.to_string());
        }
    }
    Ok(())
}
