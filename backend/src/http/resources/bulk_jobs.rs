//! Bulk jobs: their progress, and canceling one.

use crate::http::middleware::authed::{AsOperator, AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{next_cursor, page_limit, ApiPath, ApiQuery};
use crate::http::AppState;
use crate::store::JobRow;
use axum::extract::State;
use axum::Json;
use chrono::Utc;
use serde::Deserialize;
use trellis_model::api::{Job, Page, Problem};
use trellis_model::JobStatus;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(show)).routes(routes!(cancel))
}

pub const MAX_PAGE: i64 = 500;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ListParams {
    cursor: Option<Uuid>,
    limit: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/jobs",
    operation_id = "listJobs",
    tag = "jobs",
    params(ListParams),
    responses((status = 200, description = "Bulk jobs, newest first", body = Page<Job>))
)]
async fn list(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiQuery(p): ApiQuery<ListParams>,
) -> ApiResult<Json<Page<Job>>> {
    let limit = page_limit(p.limit, 50, MAX_PAGE)?;
    let mut rows = state.store.list_jobs(p.cursor, limit + 1).await?;
    let next = next_cursor(&mut rows, limit, |j| j.id.to_string());
    Ok(Json(Page { items: rows.iter().map(view).collect(), next_cursor: next }))
}

#[utoipa::path(
    get,
    path = "/jobs/{id}",
    operation_id = "showJob",
    tag = "jobs",
    responses((status = 200, description = "A job and its progress", body = Job))
)]
async fn show(State(state): State<AppState>, _: Authed<AsViewer>, ApiPath(id): ApiPath<Uuid>) -> ApiResult<Json<Job>> {
    let job = state.store.get_job(id).await?.ok_or_else(|| ApiError::NotFound(format!("no job with id {id}")))?;
    Ok(Json(view(&job)))
}

/// Stops a queued or running job after its current batch; what it did so far stays done.
#[utoipa::path(
    post,
    path = "/jobs/{id}/cancel",
    operation_id = "cancelJob",
    tag = "jobs",
    responses(
        (status = 200, description = "The job stops after its current batch", body = Job),
        (status = 409, description = "The job has already finished", body = Problem),
    )
)]
async fn cancel(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Job>> {
    let job = state
        .store
        .cancel_job(id, Utc::now())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no job with id {id}")))?;
    if job.status != JobStatus::Canceled {
        return Err(ApiError::Conflict(format!(
            "job {id} has already {}; only queued or running jobs can be canceled",
            job.status
        )));
    }
    Ok(Json(view(&job)))
}

fn view(j: &JobRow) -> Job {
    Job {
        id: j.id.to_string(),
        kind: j.kind,
        filter: j.filter.0.clone(),
        status: j.status,
        matched: j.matched,
        processed: j.processed,
        failed: j.failed,
        error: j.error.clone(),
        created_by: j.created_by.clone(),
        created_at: j.created_at,
        updated_at: j.updated_at,
    }
}
