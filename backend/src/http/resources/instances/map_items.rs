//! A `map` node's items: the paged per-item table of the run view, and each map node's
//! progress in the instance detail.

use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{next_cursor, page_limit, ApiPath, ApiQuery};
use crate::http::AppState;
use crate::store::{InstanceRow, MapItemCount, MapItemRow};
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use std::collections::BTreeMap;
use trellis_model::api::{InstanceDetail, MapItem, MapItemPage};
use trellis_model::config::NodeKind;
use trellis_model::trace::ItemProgress;
use trellis_model::NodeStatus;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

const MAX_PAGE: i64 = 1_000;
/// The statuses an item can be in, each counted (zeros too).
const ITEM_STATUSES: [NodeStatus; 6] = [
    NodeStatus::Pending,
    NodeStatus::Running,
    NodeStatus::Succeeded,
    NodeStatus::Failed,
    NodeStatus::TimedOut,
    NodeStatus::Canceled,
];

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_items))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ItemParams {
    /// Only items in this status.
    status: Option<NodeStatus>,
    /// The `next_cursor` of the previous page.
    cursor: Option<u32>,
    limit: Option<i64>,
}

/// A page of a `map` node's items in index order, with the node's counts by status.
#[utoipa::path(
    get,
    path = "/instances/{id}/nodes/{node}/items",
    operation_id = "listMapItems",
    tag = "instances",
    params(ItemParams),
    responses((status = 200, description = "The node's items, in index order", body = MapItemPage))
)]
async fn list_items(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath((id, node)): ApiPath<(Uuid, String)>,
    ApiQuery(p): ApiQuery<ItemParams>,
) -> ApiResult<Json<MapItemPage>> {
    let limit = page_limit(p.limit, 100, MAX_PAGE)?;
    let snapshot =
        state.store.get_instance(id).await?.ok_or_else(|| ApiError::NotFound(format!("no instance with id {id}")))?;
    if !snapshot.nodes.iter().any(|n| n.node_id == node) {
        return Err(ApiError::NotFound(format!("instance {id} has no node `{node}`")));
    }
    let after = p.cursor.map_or(-1, |c| c.min(i32::MAX as u32) as i32);
    let mut rows = state.store.map_item_page(id, &node, p.status, after, limit + 1).await?;
    let next = next_cursor(&mut rows, limit, |r| r.idx.to_string());
    let counts = state.store.map_item_counts(id).await?;
    let mut by_status: BTreeMap<String, u64> = ITEM_STATUSES.iter().map(|s| (s.as_str().to_owned(), 0)).collect();
    for count in counts.iter().filter(|c| c.node_id == node) {
        *by_status.entry(count.status.as_str().to_owned()).or_default() += count.count.max(0) as u64;
    }
    let total = by_status.values().sum();
    Ok(Json(MapItemPage { items: rows.into_iter().map(view).collect(), next_cursor: next, total, counts: by_status }))
}

fn view(row: MapItemRow) -> MapItem {
    MapItem {
        index: row.idx.max(0) as u32,
        status: row.status,
        attempts: row.attempts,
        started_at: row.started_at,
        ended_at: row.ended_at,
        output: row.output.map(|o| o.0),
        error: row.error,
        child: row.child_id.map(|c| c.to_string()),
    }
}

/// Puts each map node's progress on its view in `shown`.
/// Only an instance whose version has a map node is asked for counts: the detail is read after
/// every status change of a followed run.
pub(super) async fn add_progress(state: &AppState, shown: &mut InstanceDetail, row: &InstanceRow) -> ApiResult<()> {
    let plan = state.engine.plan(row.workflow_id, row.version).await?;
    if !plan.nodes.iter().any(|n| n.kind == NodeKind::Map) {
        return Ok(());
    }
    let counts = state.store.map_item_counts(row.id).await?;
    for node in shown.nodes.iter_mut() {
        let mine = counts.iter().filter(|c| c.node_id == node.id);
        node.items = progress(mine);
    }
    Ok(())
}

/// The progress the counts of one node's items tell (`None`: the node has no items).
fn progress<'a>(counts: impl Iterator<Item = &'a MapItemCount>) -> Option<ItemProgress> {
    let mut progress: Option<ItemProgress> = None;
    for count in counts {
        let p = progress.get_or_insert_with(ItemProgress::default);
        let n = count.count.max(0) as u32;
        p.total += n;
        if let Some(c) = p.count_of(count.status) {
            *c += n;
        }
    }
    progress
}
