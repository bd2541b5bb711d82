//! The external worker protocol for `task` nodes: long-poll claim with a lease,
//! heartbeat, complete, fail. A stale or unknown lease token is 409 and changes nothing.

use crate::http::middleware::authed::{AsOperator, Authed};
use crate::http::middleware::error::ApiResult;
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::time::Duration;
use trellis_model::api::{LeaseExtended, Problem, TaskComplete, TaskFail, TaskHeartbeat, TaskPoll, TaskView};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(poll))
        .routes(routes!(heartbeat))
        .routes(routes!(complete))
        .routes(routes!(fail))
}

#[utoipa::path(
    post,
    path = "/tasks/poll",
    operation_id = "pollTasks",
    tag = "tasks",
    request_body = TaskPoll,
    responses(
        (status = 200, description = "A task, leased to the caller", body = TaskView),
        (status = 204, description = "Nothing arrived within `wait_ms`"),
    )
)]
async fn poll(
    State(state): State<AppState>,
    auth: Authed<AsOperator>,
    ApiJson(body): ApiJson<TaskPoll>,
) -> ApiResult<Response> {
    let wait = Duration::from_millis(body.wait_ms.unwrap_or(0));
    let Some(task) = state.engine.poll_task(&body.queue, wait).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    tracing::debug!(worker = %body.worker, by = %auth.principal.name, task = %task.id, "task leased");
    let view = TaskView {
        id: task.id.to_string(),
        lease_token: task.lease_token,
        lease_expires_at: task.lease_expires_at,
        instance_id: task.instance_id.to_string(),
        idempotency_key: format!("{}:{}:{}", task.instance_id, task.node, task.attempt),
        node: task.node,
        attempt: task.attempt,
        input: task.input,
    };
    Ok(Json(view).into_response())
}

#[utoipa::path(
    post,
    path = "/tasks/{id}/heartbeat",
    operation_id = "heartbeatTask",
    tag = "tasks",
    request_body = TaskHeartbeat,
    responses(
        (status = 200, description = "The lease, extended", body = LeaseExtended),
        (status = 409, description = "The lease token is stale or unknown", body = Problem),
    )
)]
async fn heartbeat(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<TaskHeartbeat>,
) -> ApiResult<Json<LeaseExtended>> {
    let until = state.engine.heartbeat_task(id, &body.lease_token).await?;
    Ok(Json(LeaseExtended { lease_expires_at: until }))
}

#[utoipa::path(
    post,
    path = "/tasks/{id}/complete",
    operation_id = "completeTask",
    tag = "tasks",
    request_body = TaskComplete,
    responses(
        (status = 204, description = "Recorded"),
        (status = 409, description = "The lease token is stale or unknown", body = Problem),
    )
)]
async fn complete(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<TaskComplete>,
) -> ApiResult<StatusCode> {
    state.engine.complete_task(id, &body.lease_token, body.output).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/tasks/{id}/fail",
    operation_id = "failTask",
    tag = "tasks",
    request_body = TaskFail,
    responses(
        (status = 204, description = "Recorded"),
        (status = 409, description = "The lease token is stale or unknown", body = Problem),
    )
)]
async fn fail(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<TaskFail>,
) -> ApiResult<StatusCode> {
    state.engine.fail_task(id, &body.lease_token, body.error, body.retryable).await?;
    Ok(StatusCode::NO_CONTENT)
}
