//! `GET /stats/instances`: throughput and durations over the stored instances, for the
//! dashboard's charts. From the database rather than `/metrics`, so the figures survive
//! restarts and are the same whichever process answers.

use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::ApiQuery;
use crate::http::AppState;
use crate::store::StatsQuery;
use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use std::collections::HashMap;
use trellis_model::api::{InstanceStats, StatsSlot, StatusCounts, WorkflowDurations};
use trellis_model::InstanceStatus;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// Slots one answer may hold: a day of minutes, with room to spare.
const MAX_SLOTS: i64 = 1_500;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(instance_stats))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct StatsParams {
    /// Ended at or after; an hour before `until` when left out. Rounded down to the bucket.
    since: Option<DateTime<Utc>>,
    /// Ended before; now when left out.
    until: Option<DateTime<Utc>>,
    /// `minute` (the default), `hour` or `day`.
    bucket: Option<String>,
    workflow: Option<Uuid>,
}

#[utoipa::path(
    get,
    path = "/stats/instances",
    operation_id = "showInstanceStats",
    tag = "instances",
    params(StatsParams),
    responses(
        (status = 200, description = "Finished instances per slot and status, and run durations per workflow", body = InstanceStats),
        (status = 400, description = "An unknown bucket, a range backwards, or too many slots", body = trellis_model::api::Problem),
    )
)]
async fn instance_stats(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiQuery(p): ApiQuery<StatsParams>,
) -> ApiResult<Json<InstanceStats>> {
    let bucket = p.bucket.unwrap_or_else(|| "minute".to_owned());
    let seconds = match bucket.as_str() {
        "minute" => 60,
        "hour" => 3_600,
        "day" => 86_400,
        other => return Err(ApiError::BadRequest(format!("unknown bucket `{other}`; use minute, hour or day"))),
    };
    let until = p.until.unwrap_or_else(Utc::now);
    let since = floor_to(p.since.unwrap_or(until - Duration::hours(1)), seconds);
    if since >= until {
        return Err(ApiError::BadRequest(format!("`since` ({since}) must be before `until` ({until})")));
    }
    let span = (until - since).num_seconds();
    let slots = ((span + seconds - 1) / seconds).max(1);
    if slots > MAX_SLOTS {
        return Err(ApiError::BadRequest(format!(
            "{slots} slots of a {bucket} is more than {MAX_SLOTS}: use a larger bucket or a shorter range"
        )));
    }
    let query = StatsQuery { since, until, slot_seconds: seconds, workflow: p.workflow };
    let counted = state.store.finished_per_slot(&query).await?;
    let mut durations = state.store.duration_ranks(&query).await?;
    durations.sort_by(|a, b| b.count.cmp(&a.count).then(a.workflow_id.cmp(&b.workflow_id)));
    let ids: Vec<Uuid> = durations.iter().map(|d| d.workflow_id).collect();
    let names: HashMap<Uuid, String> = state.store.workflow_names(&ids).await?.into_iter().collect();
    Ok(Json(InstanceStats {
        since,
        until,
        bucket,
        slots: fill_slots(since, seconds, slots, &counted),
        durations: durations
            .into_iter()
            .map(|d| WorkflowDurations {
                workflow_name: names.get(&d.workflow_id).cloned(),
                workflow_id: d.workflow_id.to_string(),
                count: d.count,
                p50_ms: d.p50_ms,
                p95_ms: d.p95_ms,
            })
            .collect(),
    }))
}

/// `t` rounded down to a whole number of `seconds` since the epoch, so slots line up with
/// clock minutes, hours and (UTC) days.
fn floor_to(t: DateTime<Utc>, seconds: i64) -> DateTime<Utc> {
    let at = t.timestamp().div_euclid(seconds) * seconds;
    DateTime::from_timestamp(at, 0).unwrap_or(t)
}

/// Every slot from `since`, each with its counts (zero where nothing finished).
fn fill_slots(
    since: DateTime<Utc>,
    seconds: i64,
    slots: i64,
    counted: &[(i64, InstanceStatus, i64)],
) -> Vec<StatsSlot> {
    (0..slots)
        .map(|slot| StatsSlot {
            start: since + Duration::seconds(slot * seconds),
            counts: StatusCounts::of(counted.iter().filter(|(s, _, _)| *s == slot).map(|(_, status, n)| (*status, *n))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_line_up_with_the_clock_and_empty_ones_count_zero() {
        let t = DateTime::parse_from_rfc3339("2026-11-24T09:17:42Z").unwrap().with_timezone(&Utc);
        assert_eq!(floor_to(t, 60).to_rfc3339(), "2026-11-24T09:17:00+00:00");
        assert_eq!(floor_to(t, 86_400).to_rfc3339(), "2026-11-24T00:00:00+00:00");
        let slots = fill_slots(floor_to(t, 60), 60, 3, &[(1, InstanceStatus::Failed, 2)]);
        assert_eq!(slots.len(), 3);
        assert_eq!((slots[0].counts.get(InstanceStatus::Failed), slots[1].counts.get(InstanceStatus::Failed)), (0, 2));
        assert_eq!(slots[2].start.to_rfc3339(), "2026-11-24T09:19:00+00:00");
    }
}
