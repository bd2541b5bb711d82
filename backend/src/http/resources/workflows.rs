//! Workflows and their drafts: create, list, get, rename, archive, save, validate.

use crate::http::middleware::authed::{AsEditor, AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{next_cursor, page_limit, ApiJson, ApiPath, ApiQuery};
use crate::http::AppState;
use crate::store::{NewWorkflow, WorkflowChange, WorkflowQuery, WorkflowRecord, WriteOutcome};
use axum::extract::State;
use axum::http::header::{ETAG, IF_MATCH, LOCATION};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use trellis_model::api::Problem;
use trellis_model::api::{CreateWorkflow, Page, UpdateWorkflow, Workflow, WorkflowSummary};
use trellis_model::{Definition, Issue, Report};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub const MAX_NAME_LEN: usize = 200;
pub const MAX_DESCRIPTION_LEN: usize = 4_000;
const DEFAULT_PAGE: i64 = 50;
pub const MAX_PAGE: i64 = 200;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, update))
        .routes(routes!(archive))
        .routes(routes!(unarchive))
        .routes(routes!(save_draft))
        .routes(routes!(validate_definition))
}

#[utoipa::path(
    post,
    path = "/workflows",
    operation_id = "createWorkflow",
    tag = "workflows",
    request_body = CreateWorkflow,
    responses((status = 201, description = "Created; `Location` names it, `ETag` is the draft's", body = Workflow))
)]
async fn create(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiJson(body): ApiJson<CreateWorkflow>,
) -> ApiResult<Response> {
    let draft = body.definition.unwrap_or_default();
    let id = Uuid::now_v7();
    let problems = draft_problems(&state, id, &draft).await?;
    let new = NewWorkflow {
        id,
        name: clean_name(&body.name)?,
        description: body.description.map(|d| clean_description(&d)).transpose()?,
        draft,
        now: chrono::Utc::now(),
    };
    let record = state.store.create_workflow(&new).await?;
    let location = format!("/api/v1/workflows/{}", record.id);
    let mut response = (StatusCode::CREATED, with_problems(&record, problems)).into_response();
    response.headers_mut().insert(LOCATION, HeaderValue::from_str(&location).expect("ids are ASCII"));
    Ok(response)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    cursor: Option<String>,
    limit: Option<i64>,
    /// Case-insensitive part of the name.
    q: Option<String>,
    #[serde(default)]
    archived: bool,
}

#[utoipa::path(
    get,
    path = "/workflows",
    operation_id = "listWorkflows",
    tag = "workflows",
    params(ListParams),
    responses((status = 200, description = "A page of workflows, newest first", body = Page<WorkflowSummary>))
)]
async fn list(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<Page<WorkflowSummary>>> {
    let limit = page_limit(params.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let before = params
        .cursor
        .map(|c| Uuid::parse_str(&c).map_err(|_| ApiError::BadRequest("`cursor` is not one this API returned".into())))
        .transpose()?;
    let query = WorkflowQuery {
        before,
        limit: limit + 1,
        name_contains: params.q.filter(|q| !q.trim().is_empty()),
        include_archived: params.archived,
    };
    let mut rows = state.store.list_workflows(&query).await?;
    let next_cursor = next_cursor(&mut rows, limit, |r| r.id.to_string());
    Ok(Json(Page { items: rows.iter().map(summary).collect(), next_cursor }))
}

#[utoipa::path(
    get,
    path = "/workflows/{id}",
    operation_id = "showWorkflow",
    tag = "workflows",
    responses(
        (status = 200, description = "The workflow with its draft; `ETag` names the draft revision", body = Workflow),
    )
)]
async fn show(State(state): State<AppState>, _: Authed<AsViewer>, ApiPath(id): ApiPath<Uuid>) -> ApiResult<Response> {
    Ok(with_etag(&find(&state, id).await?))
}

#[utoipa::path(
    patch,
    path = "/workflows/{id}",
    operation_id = "updateWorkflow",
    tag = "workflows",
    request_body = UpdateWorkflow,
    responses((status = 200, description = "Renamed or redescribed", body = Workflow))
)]
async fn update(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<UpdateWorkflow>,
) -> ApiResult<Response> {
    let change = WorkflowChange {
        name: body.name.as_deref().map(clean_name).transpose()?,
        description: body.description.as_deref().map(clean_description).transpose()?,
        archived: None,
    };
    changed(state.store.update_workflow(id, &change).await?)
}

#[utoipa::path(
    post,
    path = "/workflows/{id}/archive",
    operation_id = "archiveWorkflow",
    tag = "workflows",
    responses((status = 200, description = "Archived: hidden from the list, no new versions", body = Workflow))
)]
async fn archive(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Response> {
    let change = WorkflowChange { archived: Some(true), ..Default::default() };
    changed(state.store.update_workflow(id, &change).await?)
}

#[utoipa::path(
    post,
    path = "/workflows/{id}/unarchive",
    operation_id = "unarchiveWorkflow",
    tag = "workflows",
    responses((status = 200, description = "Unarchived", body = Workflow))
)]
async fn unarchive(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Response> {
    let change = WorkflowChange { archived: Some(false), ..Default::default() };
    changed(state.store.update_workflow(id, &change).await?)
}

#[utoipa::path(
    put,
    path = "/workflows/{id}/draft",
    operation_id = "saveWorkflowDraft",
    tag = "workflows",
    request_body = Definition,
    params(("If-Match" = String, Header, description = "The ETag the draft was loaded with, or `*`")),
    responses(
        (status = 200, description = "Saved, problems and all; the new `ETag` is in the header and body, and \
                                      `problems` lists what validate finds in it (publishing waits for them to be fixed)", body = Workflow),
        (status = 412, description = "The draft changed since it was loaded", body = Problem),
        (status = 413, description = "The definition is over the size limit", body = Problem),
        (status = 422, description = "Not a definition: not JSON, wrong types, or over the node or edge limit", body = Problem),
        (status = 428, description = "`If-Match` is missing", body = Problem),
    )
)]
async fn save_draft(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(draft): ApiJson<Definition>,
) -> ApiResult<Response> {
    let expected = if_match(&headers)?;
    let problems = draft_problems(&state, id, &draft).await?;
    match state.store.save_draft(id, expected, &draft).await? {
        WriteOutcome::Done(_) => Ok(with_problems(&find(&state, id).await?, problems)),
        WriteOutcome::Stale => Err(ApiError::PreconditionFailed(
            "the draft was changed by someone else since you loaded it; reload it, or save again with the new ETag"
                .into(),
        )),
        WriteOutcome::Archived => Err(archived_error()),
        WriteOutcome::NotFound => Err(workflow_not_found(id)),
    }
}

#[utoipa::path(
    post,
    path = "/workflows/{id}/validate",
    operation_id = "validateWorkflowDefinition",
    tag = "workflows",
    request_body = Definition,
    responses((status = 200, description = "Every error and warning of the definition", body = Report))
)]
async fn validate_definition(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(definition): ApiJson<Definition>,
) -> ApiResult<Json<Report>> {
    find(&state, id).await?;
    Ok(Json(super::callees::validate_for_publish(&state, id, &definition).await?))
}

/// What validate finds in `draft` (of workflow `id`), for the answer to a save: a draft is kept
/// with its problems — a cycle, a dangling edge, a bad expression, an unknown secret — so
/// unfinished work is never lost; publishing refuses them. Only what is over the size limits
/// is refused (413 for bytes, 422 for nodes or edges): the store must not hold it at all.
async fn draft_problems(state: &AppState, id: Uuid, draft: &Definition) -> ApiResult<Vec<Issue>> {
    let report = super::callees::validate_for_publish(state, id, draft).await?;
    if let Some(too_large) = report.errors.iter().find(|e| e.code == "too_large") {
        return Err(ApiError::PayloadTooLarge(too_large.message.clone()));
    }
    let over = |e: &&Issue| matches!(e.code.as_str(), "too_many_nodes" | "too_many_edges");
    if let Some(over) = report.errors.iter().find(over) {
        return Err(ApiError::invalid(over.message.clone(), vec![over.clone()]));
    }
    Ok(report.errors)
}

/// The revision named by `If-Match`: `Some(rev)`, or `None` for `*` (any revision).
fn if_match(headers: &HeaderMap) -> ApiResult<Option<i64>> {
    let Some(value) = headers.get(IF_MATCH) else {
        return Err(ApiError::PreconditionRequired(
            "send `If-Match` with the ETag you loaded the workflow with, so concurrent edits are not lost".into(),
        ));
    };
    let value = value.to_str().unwrap_or_default().trim();
    if value == "*" {
        return Ok(None);
    }
    let rev = value
        .split(',')
        .find_map(|tag| tag.trim().trim_start_matches("W/").trim_matches('"').strip_prefix('r')?.parse().ok());
    match rev {
        Some(rev) => Ok(Some(rev)),
        None => Err(ApiError::PreconditionFailed("`If-Match` does not name a current ETag of this workflow".into())),
    }
}

pub fn etag(rev: i64) -> String {
    format!("\"r{rev}\"")
}

pub async fn find(state: &AppState, id: Uuid) -> ApiResult<WorkflowRecord> {
    state.store.get_workflow(id).await?.ok_or_else(|| workflow_not_found(id))
}

pub fn workflow_not_found(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no workflow with id {id}"))
}

pub fn archived_error() -> ApiError {
    ApiError::Conflict("the workflow is archived; unarchive it to change or publish it".into())
}

fn changed(record: Option<WorkflowRecord>) -> ApiResult<Response> {
    record.map(|r| with_etag(&r)).ok_or_else(|| ApiError::NotFound("no such workflow".into()))
}

fn with_etag(record: &WorkflowRecord) -> Response {
    answer(record, None)
}

/// The workflow as a save or create answers it: with its draft's `problems`.
fn with_problems(record: &WorkflowRecord, problems: Vec<Issue>) -> Response {
    answer(record, Some(problems))
}

fn answer(record: &WorkflowRecord, problems: Option<Vec<Issue>>) -> Response {
    let tag = etag(record.draft_rev);
    let body = Workflow { summary: summary(record), draft: record.draft.0.clone(), etag: tag.clone(), problems };
    let mut response = Json(body).into_response();
    response.headers_mut().insert(ETAG, HeaderValue::from_str(&tag).expect("etags are ASCII"));
    response
}

pub fn summary(r: &WorkflowRecord) -> WorkflowSummary {
    WorkflowSummary {
        id: r.id.to_string(),
        name: r.name.clone(),
        description: r.description.clone(),
        latest_version: r.latest_version,
        archived: r.archived,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

/// Names are stored exactly as typed (trimmed); markup or SQL in them is harmless text.
fn clean_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_LEN {
        return Err(ApiError::invalid(
            format!("the name must be 1-{MAX_NAME_LEN} characters"),
            vec![trellis_model::Issue::new("invalid_name", "name is empty or too long").path("name")],
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "the name must not contain control characters",
            vec![trellis_model::Issue::new("invalid_name", "control characters in name").path("name")],
        ));
    }
    Ok(name.to_owned())
}

fn clean_description(text: &str) -> ApiResult<String> {
    if text.chars().count() > MAX_DESCRIPTION_LEN || text.contains('\0') {
        return Err(ApiError::invalid(
            format!("the description must be at most {MAX_DESCRIPTION_LEN} characters, without NUL"),
            vec![trellis_model::Issue::new("invalid_description", "description too long").path("description")],
        ));
    }
    Ok(text.to_owned())
}
