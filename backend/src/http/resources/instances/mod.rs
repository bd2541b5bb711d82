//! Instances: start, find, inspect, cancel, signal, pause, resume, retry; bulk actions
//! and the queue inspector in the submodules.

mod approval_links;
mod bulk;
mod debounced;
mod export;
mod failure_links;
mod list_query;
mod map_items;
mod queue;
mod slow_marks;

use crate::engine::{EngineError, StartRequest};
use crate::http::middleware::authed::{AsOperator, AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{next_cursor, optional_json, page_limit, ApiJson, ApiPath, RawBody};
use crate::http::AppState;
use crate::store::{InstanceRow, Snapshot};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use list_query::{ContentParams, ListFilters, ListQuery, Paging};
use serde_json::Value;
use std::collections::HashMap;
use trellis_model::api::{
    InstanceDetail, InstancePage, InstanceSummary, NodeView, ParentRef, Problem, RetryRequest, SignalRequest,
    StartInstance, Started, StatusCounts,
};
use trellis_model::trace::TraceParent;
use trellis_model::InstanceStatus;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

const DEFAULT_PAGE: i64 = 50;
pub const MAX_PAGE: i64 = 500;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start))
        .routes(routes!(list))
        .routes(routes!(show))
        .routes(routes!(cancel))
        .routes(routes!(signal))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(retry))
        .merge(bulk::router())
        .merge(export::router())
        .merge(queue::router())
        .merge(map_items::router())
}

#[utoipa::path(
    post,
    path = "/workflows/{id}/instances",
    operation_id = "startInstance",
    tag = "instances",
    request_body(content = StartInstance, description = "Optional: input, version, business key"),
    params((
        "Idempotency-Key" = Option<String>,
        Header,
        description = "Repeats with the same key return the first start"
    )),
    responses(
        (status = 201, description = "Started, `queued` or `running`", body = Started),
        (status = 409, description = "No version is published", body = Problem),
        (
            status = 422,
            description = "The input violates the workflow's `input_schema` (`errors` lists each violation: `path` \
                           is its JSON Pointer into the input, `message` says what is wrong); nothing is created. \
                           Also: an Idempotency-Key reused with another request, a concurrency key without a value",
            body = Problem
        ),
        (status = 429, description = "`max_concurrent_instances` reached and `on_limit` is `reject`", body = Problem),
    )
)]
async fn start(
    State(state): State<AppState>,
    caller: Authed<AsOperator>,
    ApiPath(workflow): ApiPath<Uuid>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<(StatusCode, Json<Started>)> {
    let idempotency_key = idempotency_key(&headers)?;
    // An empty body starts with no input.
    let request: StartInstance = optional_json(&body, "start request")?;
    let input = request.input.unwrap_or(Value::Null);
    let key = request.key;
    // A caller's W3C trace context makes the instance span part of its trace; a malformed
    // one is ignored, as the spec asks.
    let parent = headers.get("traceparent").and_then(|v| v.to_str().ok()).and_then(TraceParent::parse);
    let start = StartRequest {
        version: request.version,
        key,
        idempotency_key,
        trace_parent: parent,
        started_by: Some(caller.principal.name),
        ..StartRequest::new(workflow, input)
    };
    let started = state.engine.start(start).await?;
    let body = Started {
        id: started.id.to_string(),
        status: started.status,
        version: started.version,
        debounced: started.debounced,
    };
    Ok((StatusCode::CREATED, Json(body)))
}

#[utoipa::path(
    get,
    path = "/instances",
    operation_id = "listInstances",
    tag = "instances",
    params(ListFilters, Paging, ContentParams),
    responses(
        (status = 200, description = "A page of instances, newest first, and the count per status", body = InstancePage),
        (
            status = 422,
            description = "A malformed content filter (`errors[].path` names the parameter)",
            body = Problem
        ),
    )
)]
async fn list(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ListQuery { head: page, filters, content }: ListQuery<Paging>,
) -> ApiResult<Json<InstancePage>> {
    let limit = page_limit(page.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let mut query = filters.into_query(content)?;
    query.before = page.cursor;
    query.limit = limit + 1;
    let mut rows = state.store.list_instances(&query).await?;
    let next_cursor = next_cursor(&mut rows, limit, |r| r.id.to_string());
    let names = workflow_names(&state, &rows).await?;
    // The counts are of everything else the filter matches, whatever its status, so the
    // status chips can offer the other statuses.
    query.statuses.clear();
    query.before = None;
    let counts = StatusCounts::of(state.store.count_instances(&query).await?);
    let items = rows.iter().map(|r| summary(r, names.get(&r.workflow_id).cloned())).collect();
    Ok(Json(InstancePage { items, next_cursor, counts }))
}

/// The names of the workflows of `rows`, in one query.
async fn workflow_names(state: &AppState, rows: &[InstanceRow]) -> ApiResult<HashMap<Uuid, String>> {
    let mut ids: Vec<Uuid> = rows.iter().map(|r| r.workflow_id).collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(state.store.workflow_names(&ids).await?.into_iter().collect())
}

#[utoipa::path(
    get,
    path = "/instances/{id}",
    operation_id = "showInstance",
    tag = "instances",
    responses((status = 200, description = "The instance with its nodes", body = InstanceDetail))
)]
async fn show(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<InstanceDetail>> {
    Ok(Json(shown(&state, id).await?))
}

#[utoipa::path(
    post,
    path = "/instances/{id}/cancel",
    operation_id = "cancelInstance",
    tag = "instances",
    responses(
        (status = 200, description = "Canceled", body = InstanceDetail),
        (status = 409, description = "The instance has finished", body = Problem),
    )
)]
async fn cancel(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<InstanceDetail>> {
    state.engine.cancel(id).await?;
    Ok(Json(shown(&state, id).await?))
}

#[utoipa::path(
    post,
    path = "/instances/{id}/pause",
    operation_id = "pauseInstance",
    tag = "instances",
    responses(
        (status = 200, description = "Paused: no new nodes start; running ones finish", body = InstanceDetail),
        (status = 409, description = "The instance is not running", body = Problem),
    )
)]
async fn pause(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<InstanceDetail>> {
    state.engine.pause(id).await?;
    Ok(Json(shown(&state, id).await?))
}

#[utoipa::path(
    post,
    path = "/instances/{id}/resume",
    operation_id = "resumeInstance",
    tag = "instances",
    responses(
        (status = 200, description = "Running again; what became ready starts", body = InstanceDetail),
        (status = 409, description = "The instance is not paused", body = Problem),
    )
)]
async fn resume(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<InstanceDetail>> {
    state.engine.resume(id).await?;
    Ok(Json(shown(&state, id).await?))
}

/// 200 with the instance running again, or 202 when it waits in the queue for a slot.
#[utoipa::path(
    post,
    path = "/instances/{id}/retry",
    operation_id = "retryInstance",
    tag = "instances",
    request_body = RetryRequest,
    responses(
        (status = 200, description = "Running again", body = InstanceDetail),
        (status = 202, description = "Waiting in the queue for a slot", body = InstanceDetail),
        (status = 409, description = "The instance cannot be retried in its state", body = Problem),
        (status = 422, description = "Unknown node", body = Problem),
        (status = 429, description = "The workflow is at its limit and rejects", body = Problem),
    )
)]
async fn retry(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<RetryRequest>,
) -> ApiResult<(StatusCode, Json<InstanceDetail>)> {
    let status = state.engine.retry(id, &body.from, body.latest_version).await?;
    let code = if status == InstanceStatus::Queued { StatusCode::ACCEPTED } else { StatusCode::OK };
    Ok((code, Json(shown(&state, id).await?)))
}

#[utoipa::path(
    post,
    path = "/instances/{id}/signal",
    operation_id = "signalInstance",
    tag = "instances",
    request_body = SignalRequest,
    responses(
        (status = 200, description = "Delivered to the waiting node", body = InstanceDetail),
        (status = 409, description = "The node is not waiting for a signal", body = Problem),
    )
)]
async fn signal(
    State(state): State<AppState>,
    _: Authed<AsOperator>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SignalRequest>,
) -> ApiResult<Json<InstanceDetail>> {
    state.engine.signal(id, &body.node, body.payload).await?;
    Ok(Json(shown(&state, id).await?))
}

pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    let key = value.to_str().unwrap_or_default().trim();
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_LEN {
        return Err(ApiError::BadRequest(format!(
            "`Idempotency-Key` must be 1-{MAX_IDEMPOTENCY_KEY_LEN} visible ASCII characters"
        )));
    }
    Ok(Some(key.to_owned()))
}

/// The instance as the API shows it, with its workflow's name.
async fn shown(state: &AppState, id: Uuid) -> ApiResult<InstanceDetail> {
    let Some(snapshot) = state.store.get_instance(id).await? else {
        // An id a `debounce` burst gave out: the instance is made when the burst ends.
        return match state.store.pending_debounce(id).await? {
            Some(burst) => Ok(debounced::gathering(state, &burst).await?),
            None => Err(ApiError::NotFound(format!("no instance with id {id}"))),
        };
    };
    let name = state.store.get_workflow(snapshot.instance.workflow_id).await?.map(|w| w.name);
    let mut shown = detail(&snapshot, name);
    link_family(state, &snapshot, &mut shown).await?;
    failure_links::add(state, &snapshot.instance, &mut shown).await?;
    map_items::add_progress(state, &mut shown, &snapshot.instance).await?;
    slow_marks::add(state, &snapshot.instance, &mut shown).await?;
    approval_links::add(state, snapshot.instance.id, &mut shown).await?;
    shown.held_by = queue::held_by(state, &snapshot).await?;
    Ok(shown)
}

/// Fills in the sub-workflow links: the parent (with its workflow while it exists) and each
/// `subworkflow` node's latest child with its status.
async fn link_family(state: &AppState, snapshot: &Snapshot, shown: &mut InstanceDetail) -> ApiResult<()> {
    let row = &snapshot.instance;
    if let (Some(parent), Some(node)) = (row.parent_instance_id, &row.parent_node_id) {
        let workflow = state.store.instance_versions(&[parent]).await?.first().map(|(_, workflow, _)| *workflow);
        let workflow_name = match workflow {
            Some(id) => state.store.get_workflow(id).await?.map(|w| w.name),
            None => None,
        };
        shown.parent = Some(ParentRef {
            instance: parent.to_string(),
            node: node.clone(),
            workflow_id: workflow.map(|w| w.to_string()),
            workflow_name,
        });
    }
    // Oldest first, so the last one a node started wins.
    for child in state.store.children(row.id).await? {
        if let Some(view) = shown.nodes.iter_mut().find(|n| Some(&n.id) == child.parent_node_id.as_ref()) {
            view.child = Some(child.id.to_string());
            view.child_status = Some(child.status);
        }
    }
    Ok(())
}

pub(super) fn summary(r: &InstanceRow, workflow_name: Option<String>) -> InstanceSummary {
    InstanceSummary {
        id: r.id.to_string(),
        workflow_id: r.workflow_id.to_string(),
        workflow_name,
        version: r.version,
        status: r.status,
        key: r.business_key.clone(),
        error: r.error.clone(),
        created_at: r.created_at,
        started_at: r.started_at,
        ended_at: r.ended_at,
        started_by: r.started_by.clone(),
    }
}

fn detail(s: &Snapshot, workflow_name: Option<String>) -> InstanceDetail {
    let nodes = s.nodes.iter().map(|n| NodeView {
        id: n.node_id.clone(),
        status: n.status,
        attempts: n.attempts,
        started_at: n.started_at,
        ended_at: n.ended_at,
        output: n.output.clone(),
        error: n.error.clone(),
        child: None,
        child_status: None,
        items: None,
        slow: false,
        slow_after_ms: None,
        slow_basis: None,
        approval: None,
    });
    InstanceDetail {
        summary: summary(&s.instance, workflow_name),
        input: s.instance.input.0.clone(),
        output: s.instance.output.as_ref().map(|o| o.0.clone()),
        nodes: nodes.collect(),
        parent: None,
        failure_handler: None,
        handles_failure_of: None,
        // Stored as JSON text, so it always parses.
        concurrency_key: s.instance.concurrency_key.as_deref().and_then(|k| serde_json::from_str(k).ok()),
        held_by: None,
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(m) => ApiError::NotFound(m),
            EngineError::Conflict(m) => ApiError::Conflict(m),
            EngineError::Forbidden(m) => ApiError::Forbidden(m),
            EngineError::LimitReached(m) => ApiError::Rejected { status: StatusCode::TOO_MANY_REQUESTS, detail: m },
            EngineError::RateLimited { detail, retry_at } => {
                ApiError::TooManyRequests { detail, retry_after: retry_after_secs(retry_at) }
            }
            EngineError::TooLarge(m) => ApiError::PayloadTooLarge(m),
            EngineError::Invalid(m) => ApiError::invalid(m, vec![]),
            EngineError::InputRejected { detail, errors } => ApiError::invalid(detail, errors),
            EngineError::Unavailable(m) => ApiError::Unavailable(m),
            EngineError::Busy(m) => ApiError::sandbox_busy(m),
            EngineError::Store(s) => s.into(),
            EngineError::Internal(e) => ApiError::Internal(e),
        }
    }
}

/// Whole seconds from now until `at`, at least 1 (`Retry-After` counts in seconds; 0 would
/// invite an immediate retry that is refused again).
pub fn retry_after_secs(at: chrono::DateTime<chrono::Utc>) -> u64 {
    let millis = (at - chrono::Utc::now()).num_milliseconds().max(0) as u64;
    millis.div_ceil(1000).max(1)
}
