//! Shared limits (`/limits`): a concurrency and/or a rate that node attempts naming the limit
//! are held to across every workflow and process (the engine's side: `engine/limited.rs`).
//! Anyone signed in reads them with what they hold now; editors, who draw the nodes that name
//! them, make, change and delete them. A limit deleted while attempts wait for it lets them go
//! on unlimited (their logs say so); a workflow naming a limit that does not exist is refused
//! at publish, naming it.

use crate::http::middleware::authed::{AsEditor, AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::store::{LimitRow, LimitUse};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::Utc;
use std::collections::BTreeMap;
use trellis_model::api::{LimitRate, Problem, SharedLimit, SharedLimitList, SharedLimitSpec};
use trellis_model::shared_limit::{named_limits, spec_problems};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(show, update, delete))
}

#[utoipa::path(
    get,
    path = "/limits",
    operation_id = "listLimits",
    tag = "limits",
    responses((status = 200, description = "Every shared limit, by name, with what it holds now", body = SharedLimitList))
)]
async fn list(State(state): State<AppState>, _: Authed<AsViewer>) -> ApiResult<Json<SharedLimitList>> {
    let rows = state.store.list_limits(Utc::now()).await?;
    let used_by = users_of_limits(&state).await?;
    let items = rows.into_iter().map(|(row, used)| shown(row, used, &used_by)).collect();
    Ok(Json(SharedLimitList { items }))
}

#[utoipa::path(
    post,
    path = "/limits",
    operation_id = "createLimit",
    tag = "limits",
    request_body = SharedLimitSpec,
    responses(
        (status = 201, description = "Made", body = SharedLimit),
        (status = 409, description = "A limit of that name exists", body = Problem),
        (status = 422, description = "Settings that cannot hold (`errors` names each field)", body = Problem),
    )
)]
async fn create(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiJson(spec): ApiJson<SharedLimitSpec>,
) -> ApiResult<(StatusCode, Json<SharedLimit>)> {
    checked(&spec)?;
    let row = row_of(&spec);
    if !state.store.insert_limit(&row).await? {
        return Err(ApiError::Conflict(format!("a limit named `{}` exists; change it with PUT", spec.name)));
    }
    Ok((StatusCode::CREATED, Json(current(&state, &spec.name).await?)))
}

#[utoipa::path(
    get,
    path = "/limits/{name}",
    operation_id = "getLimit",
    tag = "limits",
    responses(
        (status = 200, description = "The limit with what it holds now", body = SharedLimit),
        (status = 404, description = "No limit of that name", body = Problem),
    )
)]
async fn show(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<SharedLimit>> {
    Ok(Json(current(&state, &name).await?))
}

#[utoipa::path(
    put,
    path = "/limits/{name}",
    operation_id = "updateLimit",
    tag = "limits",
    request_body = SharedLimitSpec,
    responses(
        (status = 200, description = "Changed: attempts asking from now on meet the new settings", body = SharedLimit),
        (status = 404, description = "No limit of that name", body = Problem),
        (status = 422, description = "Settings that cannot hold, or a different `name` (a limit is not renamed)", body = Problem),
    )
)]
async fn update(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(name): ApiPath<String>,
    ApiJson(mut spec): ApiJson<SharedLimitSpec>,
) -> ApiResult<Json<SharedLimit>> {
    if spec.name.is_empty() {
        spec.name = name.clone();
    }
    if spec.name != name {
        return Err(super::api_keys::bad_field(
            "name",
            format!("a limit is not renamed: make `{}` and point the nodes at it instead", spec.name),
        ));
    }
    checked(&spec)?;
    if !state.store.update_limit(&row_of(&spec)).await? {
        return Err(missing(&name));
    }
    Ok(Json(current(&state, &name).await?))
}

#[utoipa::path(
    delete,
    path = "/limits/{name}",
    operation_id = "deleteLimit",
    tag = "limits",
    responses(
        (status = 204, description = "Deleted: attempts waiting for it go on unlimited"),
        (status = 404, description = "No limit of that name", body = Problem),
    )
)]
async fn delete(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    match state.store.delete_limit(&name, Utc::now()).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(missing(&name)),
    }
}

fn checked(spec: &SharedLimitSpec) -> ApiResult<()> {
    let problems = spec_problems(spec);
    match problems.first() {
        None => Ok(()),
        Some(first) => Err(ApiError::invalid(first.message.clone(), problems)),
    }
}

fn missing(name: &str) -> ApiError {
    ApiError::NotFound(format!("no shared limit named `{name}`"))
}

fn row_of(spec: &SharedLimitSpec) -> LimitRow {
    let now = Utc::now();
    LimitRow {
        name: spec.name.clone(),
        concurrency: spec.concurrency.map(|n| n as i32),
        rate_limit: spec.rate.map(|r| r.limit as i32),
        rate_period_ms: spec.rate.map(|r| r.period_ms as i64),
        paused_until: None,
        created_at: now,
        updated_at: now,
    }
}

async fn current(state: &AppState, name: &str) -> ApiResult<SharedLimit> {
    let (row, used) = state.store.get_limit(name, Utc::now()).await?.ok_or_else(|| missing(name))?;
    Ok(shown(row, used, &users_of_limits(state).await?))
}

/// The workflows (by name) whose draft or latest version names each limit.
async fn users_of_limits(state: &AppState) -> ApiResult<BTreeMap<String, Vec<String>>> {
    let mut users: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for workflow in state.store.workflow_texts().await? {
        let mut names: Vec<String> = named_limits(&workflow.draft.0).into_iter().map(|n| n.3).collect();
        if let Some(published) = &workflow.published {
            names.extend(named_limits(&published.0).into_iter().map(|n| n.3));
        }
        names.sort_unstable();
        names.dedup();
        for name in names {
            users.entry(name).or_default().push(workflow.name.clone());
        }
    }
    Ok(users)
}

fn shown(row: LimitRow, used: LimitUse, used_by: &BTreeMap<String, Vec<String>>) -> SharedLimit {
    let rate = row.window().map(|w| LimitRate { limit: w.limit, period_ms: w.period_ms });
    let paused_until = row.paused_until.filter(|until| *until > Utc::now());
    SharedLimit {
        used_by: used_by.get(&row.name).cloned().unwrap_or_default(),
        name: row.name,
        concurrency: row.concurrency.map(|n| n.max(0) as u32),
        rate,
        in_use: used.in_use.max(0) as u64,
        waiting: used.waiting.max(0) as u64,
        rate_used: used.rate_used.max(0) as u64,
        paused_until,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}
