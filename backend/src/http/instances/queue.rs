//! The queue inspector: why an instance waits — the limit that holds it and its place in line.

use crate::http::auth::{AsViewer, Authed};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::ApiPath;
use crate::http::AppState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use trellis_model::{InstanceStatus, NodeStatus};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(queue))
}

/// Why an instance waits: the limit that holds it and its place in line.
#[utoipa::path(get, path = "/instances/{id}/queue", tag = "instances", responses((status = 200, description = "Which limit holds the instance or its nodes, and their positions", content_type = "application/json")))]
async fn queue(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Value>> {
    let snapshot =
        state.store.get_instance(id).await?.ok_or_else(|| ApiError::NotFound(format!("no instance with id {id}")))?;
    let i = &snapshot.instance;
    match i.status {
        InstanceStatus::Queued => {
            // Admission follows the latest published version's limit, as the engine does.
            let latest =
                state.store.get_workflow(i.workflow_id).await?.and_then(|w| w.latest_version).unwrap_or(i.version);
            let plan = state.engine.plan(i.workflow_id, latest).await?;
            let place = state.store.queue_place(i.workflow_id, id).await?;
            Ok(Json(json!({
                "instance_id": id.to_string(), "status": "queued",
                "held_by": {"limit": "max_concurrent_instances", "value": plan.instance_limit, "running": place.active},
                "position": place.ahead + 1, "ahead": place.ahead,
            })))
        }
        InstanceStatus::Running => {
            let plan = state.engine.plan(i.workflow_id, i.version).await?;
            let running = snapshot.nodes.iter().filter(|n| n.status == NodeStatus::Running).count();
            // The machine dispatches ready nodes in plan order as slots free up.
            let mut ready: Vec<_> = snapshot.nodes.iter().filter(|n| n.status == NodeStatus::Ready).collect();
            ready.sort_by_key(|n| n.position);
            let nodes: Vec<Value> =
                ready.iter().enumerate().map(|(k, n)| json!({"node": n.node_id, "position": k + 1})).collect();
            let limit = (plan.max_parallel != usize::MAX).then_some(plan.max_parallel);
            Ok(Json(json!({
                "instance_id": id.to_string(), "status": "running",
                "held_by": if nodes.is_empty() { Value::Null } else { json!({"limit": "max_parallel_nodes", "value": limit, "running": running}) },
                "nodes": nodes,
            })))
        }
        other => Ok(Json(json!({"instance_id": id.to_string(), "status": other, "held_by": null, "nodes": []}))),
    }
}
