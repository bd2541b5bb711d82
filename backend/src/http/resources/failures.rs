//! Failure triage: `GET /failures` groups the failed and timed-out instances of a time range
//! by workflow, failing node and error class (see `trellis_model::failure`). Each group's
//! `node` and `error_class` are also keys of the instances list and of bulk retry, so a group
//! opens as a list and is retried as one job.

use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{page_limit, ApiQuery};
use crate::http::AppState;
use crate::store::{FailureGroupRow, FailureQuery};
use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use std::collections::HashMap;
use trellis_model::api::{FailureGroup, FailureReport};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

const DEFAULT_GROUPS: i64 = 50;
pub const MAX_GROUPS: i64 = 500;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(failures))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct FailureParams {
    /// Ended at or after; 24 hours before `until` when left out.
    since: Option<DateTime<Utc>>,
    /// Ended before; now when left out.
    until: Option<DateTime<Utc>>,
    workflow: Option<Uuid>,
    /// Groups returned, the largest first (1 to 500, default 50).
    limit: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/failures",
    operation_id = "listFailureGroups",
    tag = "instances",
    params(FailureParams),
    responses((status = 200, description = "Failures of the range, grouped, the largest groups first", body = FailureReport))
)]
async fn failures(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiQuery(p): ApiQuery<FailureParams>,
) -> ApiResult<Json<FailureReport>> {
    let limit = page_limit(p.limit, DEFAULT_GROUPS, MAX_GROUPS)?;
    let until = p.until.unwrap_or_else(Utc::now);
    let since = p.since.unwrap_or(until - Duration::hours(24));
    if since >= until {
        return Err(ApiError::BadRequest(format!("`since` ({since}) must be before `until` ({until})")));
    }
    let query = FailureQuery { since, until, workflow: p.workflow, limit };
    let (rows, total) = state.store.failure_groups(&query).await?;
    let mut ids: Vec<Uuid> = rows.iter().map(|r| r.workflow_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let names: HashMap<Uuid, String> = state.store.workflow_names(&ids).await?.into_iter().collect();
    let groups = rows.into_iter().map(|r| group(r, &names)).collect();
    Ok(Json(FailureReport { since, until, total, groups }))
}

fn group(r: FailureGroupRow, names: &HashMap<Uuid, String>) -> FailureGroup {
    FailureGroup {
        workflow_name: names.get(&r.workflow_id).cloned(),
        workflow_id: r.workflow_id.to_string(),
        node: r.failed_node,
        // Failed before classes were stored: their error stands for the class (and the list's
        // `error_class` filter falls back to the error for them).
        error_class: r.error_class.or_else(|| r.sample_error.clone()).unwrap_or_default(),
        sample_error: r.sample_error,
        sample_instance: r.sample_instance.to_string(),
        count: r.count,
        first_seen: r.first_seen,
        last_seen: r.last_seen,
    }
}
