//! Cron previews: a saved trigger's next fire times, and a schedule's before it is saved.

use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{refused, ApiJson, ApiPath, ApiQuery};
use crate::http::middleware::strict;
use crate::http::AppState;
use crate::triggers::schedule::{Schedule, MAX_PREVIEW};
use crate::triggers::{CronSpec, TriggerSpec};
use axum::extract::State;
use axum::Json;
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Value};
use trellis_model::api::{FireTimes, Problem};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{find, object};

pub(super) const DEFAULT_PREVIEW: usize = 5;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(preview_spec)).routes(routes!(preview))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct PreviewParams {
    count: Option<usize>,
}

#[utoipa::path(
    get,
    path = "/triggers/{id}/preview",
    operation_id = "previewTrigger",
    tag = "triggers",
    params(PreviewParams),
    responses(
        (status = 200, description = "A cron trigger's next fire times", body = FireTimes),
        (status = 409, description = "Only cron triggers have fire times", body = Problem),
    )
)]
async fn preview(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(p): ApiQuery<PreviewParams>,
) -> ApiResult<Json<FireTimes>> {
    let count = preview_count(p.count)?;
    let trigger = find(&state, id).await?;
    let TriggerSpec::Cron(cron) =
        TriggerSpec::from_stored(&trigger.spec.0).map_err(|e| ApiError::Internal(anyhow::anyhow!(e)))?
    else {
        return Err(ApiError::Conflict("only cron triggers have fire times".into()));
    };
    fire_times(cron, count)
}

/// The preview body's `count`, read apart from the schedule's settings.
#[derive(Deserialize)]
struct Count {
    count: Option<usize>,
}

/// Checks a schedule before it is saved: its next fire times, or what to fix.
#[utoipa::path(
    post,
    path = "/triggers/preview",
    operation_id = "previewTriggerSpec",
    tag = "triggers",
    request_body(content = Value, description = "A cron trigger's settings"),
    responses(
        (status = 200, description = "The next fire times of those settings", body = FireTimes),
        (status = 422, description = "The schedule is not valid; `errors` lists what to fix", body = Problem),
    )
)]
async fn preview_spec(_: Authed<AsViewer>, ApiJson(body): ApiJson<Value>) -> ApiResult<Json<FireTimes>> {
    let mut fields = object(body)?;
    let count = json!({ "count": fields.remove("count") });
    let Count { count } = strict::from_value(count, "preview request").map_err(refused)?;
    let count = preview_count(count)?;
    let cron: CronSpec = strict::from_value(Value::Object(fields), "schedule").map_err(refused)?;
    fire_times(cron, count)
}

fn fire_times(cron: CronSpec, count: usize) -> ApiResult<Json<FireTimes>> {
    let times = times(&schedule(&cron)?, count);
    Ok(Json(FireTimes { timezone: cron.timezone, times }))
}

fn preview_count(count: Option<usize>) -> ApiResult<usize> {
    let count = count.unwrap_or(DEFAULT_PREVIEW);
    if (1..=MAX_PREVIEW).contains(&count) {
        Ok(count)
    } else {
        Err(ApiError::BadRequest(format!("`count` must be between 1 and {MAX_PREVIEW}")))
    }
}

pub(super) fn schedule(cron: &CronSpec) -> ApiResult<Schedule> {
    Schedule::new(cron)
        .map_err(|issues| ApiError::invalid("the schedule is not valid; see `errors` for what to fix", issues))
}

/// The next `count` ticks as RFC 3339 in the schedule's zone (the offset shows DST).
pub(super) fn times(schedule: &Schedule, count: usize) -> Vec<String> {
    schedule.preview(Utc::now(), count).iter().map(|t| t.to_rfc3339()).collect()
}
