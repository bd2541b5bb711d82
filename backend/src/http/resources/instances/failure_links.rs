//! The failure-handler links of an instance's details: the handler run its (latest) failure
//! started, and the failed instance a handler run handles (either may have been purged since:
//! the id alone is shown then).

use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use crate::store::InstanceRow;
use trellis_model::api::{InstanceDetail, InstanceLink};
use uuid::Uuid;

pub(super) async fn add(state: &AppState, row: &InstanceRow, shown: &mut InstanceDetail) -> ApiResult<()> {
    if let Some((handler, workflow)) = state.store.failure_handler(row.id).await? {
        shown.failure_handler = Some(link(state, handler, Some(workflow)).await?);
    }
    if let Some(failed) = row.handles_failure_of {
        let workflow = state.store.instance_versions(&[failed]).await?.first().map(|(_, workflow, _)| *workflow);
        shown.handles_failure_of = Some(link(state, failed, workflow).await?);
    }
    Ok(())
}

async fn link(state: &AppState, instance: Uuid, workflow: Option<Uuid>) -> ApiResult<InstanceLink> {
    let workflow_name = match workflow {
        Some(id) => state.store.get_workflow(id).await?.map(|w| w.name),
        None => None,
    };
    Ok(InstanceLink { instance: instance.to_string(), workflow_id: workflow.map(|w| w.to_string()), workflow_name })
}
