//! Acting on instances in bulk: purge one, and purge, cancel or retry many (as background
//! jobs, see `jobs/`), with a dry run that says what would happen.

use crate::http::middleware::authed::{AsOperator, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::jobs::{new_job, JobKind, JobScope};
use crate::store::{InstanceQuery, PurgeOutcome};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use trellis_model::api::{BulkAnswer, BulkRequest, InstanceFilter, Problem, StatusCounts};
use trellis_model::Issue;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// Ids shown by a dry run.
const SAMPLE: i64 = 10;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(purge_one))
        .routes(routes!(bulk_purge))
        .routes(routes!(bulk_cancel))
        .routes(routes!(bulk_retry))
}

#[utoipa::path(
    delete,
    path = "/instances/{id}",
    operation_id = "purgeInstance",
    tag = "instances",
    responses(
        (status = 204, description = "Purged with its whole history"),
        (status = 409, description = "The instance has not finished", body = Problem),
    )
)]
async fn purge_one(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    // One statement deletes only if finished, so a concurrent retry elsewhere cannot have
    // its instance deleted under it.
    match state.store.purge_instance(id).await? {
        PurgeOutcome::Purged => Ok(StatusCode::NO_CONTENT),
        PurgeOutcome::NotTerminal(status) => Err(ApiError::Conflict(format!(
            "instance {id} is {status}; only finished instances can be purged: cancel it first \
             (POST /api/v1/instances/{id}/cancel)"
        ))),
        PurgeOutcome::NotFound => Err(ApiError::NotFound(format!("no instance with id {id}"))),
    }
}

#[utoipa::path(
    post,
    path = "/instances/purge",
    operation_id = "purgeInstances",
    tag = "instances",
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Dry run: what would be purged", body = BulkAnswer),
        (status = 202, description = "A purge job was started; `Location` names it", body = BulkAnswer),
        (status = 422, description = "Invalid filter", body = Problem),
    )
)]
async fn bulk_purge(
    state: State<AppState>,
    auth: Authed<AsOperator>,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<Response> {
    bulk(state, auth, JobKind::Purge, body).await
}

#[utoipa::path(
    post,
    path = "/instances/cancel",
    operation_id = "cancelInstances",
    tag = "instances",
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Dry run: what would be canceled", body = BulkAnswer),
        (status = 202, description = "A cancel job was started; `Location` names it", body = BulkAnswer),
        (status = 422, description = "Invalid filter", body = Problem),
    )
)]
async fn bulk_cancel(
    state: State<AppState>,
    auth: Authed<AsOperator>,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<Response> {
    bulk(state, auth, JobKind::Cancel, body).await
}

#[utoipa::path(
    post,
    path = "/instances/retry",
    operation_id = "retryInstances",
    tag = "instances",
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Dry run: what would be retried", body = BulkAnswer),
        (
            status = 202,
            description = "A retry job was started: each instance re-runs its failed nodes; `Location` names it",
            body = BulkAnswer
        ),
        (status = 422, description = "Invalid filter", body = Problem),
    )
)]
async fn bulk_retry(
    state: State<AppState>,
    auth: Authed<AsOperator>,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<Response> {
    bulk(state, auth, JobKind::Retry, body).await
}

/// Counts what the filter matches; unless it is a dry run, queues a job to act on it.
async fn bulk(
    State(state): State<AppState>,
    auth: Authed<AsOperator>,
    kind: JobKind,
    body: BulkRequest,
) -> ApiResult<Response> {
    if body.filter.is_empty() && !body.all {
        let message = "the filter is empty, which matches every instance; give at least one of `workflow`, `status`, \
                       `version`, `since`, `until`, `key`, `ids`, or send `\"all\": true` to mean every instance";
        return Err(ApiError::invalid(message, vec![Issue::new("empty_filter", message).path("filter")]));
    }
    let query = check_filter(kind, &body.filter)?;
    let counts = state.store.count_instances(&query).await?;
    let (applies, not): (Vec<_>, Vec<_>) = counts.iter().partition(|(status, _)| kind.applies_to(*status));
    let mut answer = BulkAnswer {
        action: kind,
        dry_run: body.dry_run,
        filter: serde_json::to_value(&body.filter).map_err(|e| ApiError::Internal(e.into()))?,
        matched: applies.iter().map(|(_, n)| n).sum(),
        skipped: not.iter().map(|(_, n)| n).sum(),
        by_status: StatusCounts::of(counts),
        sample: None,
        job_id: None,
        status: None,
    };
    if body.dry_run {
        let sample =
            state.store.matching_ids(&query, kind.statuses(), None, None, Uuid::from_u128(u128::MAX), SAMPLE).await?;
        answer.sample = Some(sample.iter().map(Uuid::to_string).collect());
        return Ok(Json(answer).into_response());
    }
    let job = new_job(kind, &body.filter, answer.matched, &auth.principal.name);
    state.store.insert_job(&job).await?;
    crate::jobs::wake();
    answer.job_id = Some(job.id.to_string());
    answer.status = Some(job.status);
    let location = format!("/api/v1/jobs/{}", job.id);
    Ok((StatusCode::ACCEPTED, [(header::LOCATION, location)], Json(answer)).into_response())
}

/// Rejects what no instance could match (422) and statuses the action never applies to (409).
fn check_filter(kind: JobKind, filter: &InstanceFilter) -> ApiResult<InstanceQuery> {
    let query = InstanceQuery::from_filter(filter).map_err(|issues| {
        let detail = issues.iter().map(|i| i.message.as_str()).collect::<Vec<_>>().join("; ");
        ApiError::invalid(format!("invalid filter: {detail}"), issues)
    })?;
    if !query.statuses.is_empty() && query.statuses.iter().all(|s| !kind.applies_to(*s)) {
        let hint = match kind {
            JobKind::Purge => {
                "only finished instances (succeeded, failed, canceled, timed_out) can be purged; cancel them first"
            }
            JobKind::Cancel => "only unfinished instances (queued, running, paused) can be canceled",
            JobKind::Retry => "only instances that failed, were canceled or timed out can be retried",
        };
        let given: Vec<&str> = query.statuses.iter().map(|s| s.as_str()).collect();
        return Err(ApiError::Conflict(format!("`filter.status` is `{}`: {hint}", given.join(", "))));
    }
    Ok(query)
}

/// Kept next to the SQL's status lists so the two cannot drift apart unnoticed.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::statuses;
    use trellis_model::InstanceStatus;

    #[test]
    fn actions_apply_to_exactly_their_statuses() {
        for s in InstanceStatus::ALL {
            assert_eq!(JobKind::Purge.applies_to(*s), s.is_terminal(), "{s:?}");
            assert_eq!(JobKind::Cancel.applies_to(*s), !s.is_terminal(), "{s:?}");
        }
        assert!(statuses::TERMINAL.contains("'timed_out'"));
    }
}
