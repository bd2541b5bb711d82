//! `GET /triggers`: every workflow's triggers in one list, each with its workflow's name, for
//! the triggers overview.

use super::view;
use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use std::collections::HashMap;
use trellis_model::api::{Items, Trigger};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// Triggers listed at most; more than this is a fleet to search, not a list to read.
const MAX_LISTED: i64 = 1_000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_all))
}

#[utoipa::path(
    get,
    path = "/triggers",
    operation_id = "listTriggers",
    tag = "triggers",
    responses((status = 200, description = "Every workflow's triggers (at most 1,000), oldest first", body = Items<Trigger>))
)]
async fn list_all(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    headers: HeaderMap,
) -> ApiResult<Json<Items<Trigger>>> {
    let rows = state.store.list_all_triggers(MAX_LISTED).await?;
    let mut ids: Vec<Uuid> = rows.iter().map(|t| t.workflow_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let names: HashMap<Uuid, String> = state.store.workflow_names(&ids).await?.into_iter().collect();
    let items = rows
        .iter()
        .map(|t| Trigger { workflow_name: names.get(&t.workflow_id).cloned(), ..view(&state, &headers, t) })
        .collect();
    let items = super::brokers::with_consumers(&state, items).await?;
    Ok(Json(Items { items }))
}
