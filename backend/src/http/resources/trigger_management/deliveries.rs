//! A trigger's delivery log, newest first.

use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::ApiResult;
use crate::http::middleware::extract::{next_cursor, page_limit, ApiPath, ApiQuery};
use crate::http::AppState;
use crate::store::DeliveryRow;
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use trellis_model::api::{Delivery, Page};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::find;

const DEFAULT_PAGE: i64 = 50;
pub const MAX_PAGE: i64 = 500;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(deliveries))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct PageParams {
    cursor: Option<Uuid>,
    limit: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/triggers/{id}/deliveries",
    operation_id = "listTriggerDeliveries",
    tag = "triggers",
    params(PageParams),
    responses((status = 200, description = "The delivery log, newest first", body = Page<Delivery>))
)]
async fn deliveries(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(p): ApiQuery<PageParams>,
) -> ApiResult<Json<Page<Delivery>>> {
    let limit = page_limit(p.limit, DEFAULT_PAGE, MAX_PAGE)?;
    find(&state, id).await?;
    let mut rows = state.store.list_deliveries(id, p.cursor, limit + 1).await?;
    let next_cursor = next_cursor(&mut rows, limit, |r| r.id.to_string());
    Ok(Json(Page { items: rows.iter().map(delivery_view).collect(), next_cursor }))
}

fn delivery_view(d: &DeliveryRow) -> Delivery {
    Delivery {
        id: d.id.to_string(),
        received_at: d.received_at,
        verified: d.verified,
        delivery_id: d.delivery_key.clone(),
        scheduled_at: d.scheduled_at,
        outcome: d.outcome,
        status: d.status,
        reason: d.reason.clone(),
        instance_id: d.instance_id.map(|i| i.to_string()),
    }
}
