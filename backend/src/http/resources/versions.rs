//! Publishing drafts as immutable, numbered versions, and reading them back.

use super::callees::validate_for_publish;
use super::workflows::{archived_error, find, workflow_not_found};
use crate::http::middleware::authed::{AsEditor, AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{optional_json, ApiPath, RawBody};
use crate::http::AppState;
use crate::store::{NewVersion, VersionInfo, WriteOutcome};
use axum::extract::State;
use axum::http::header::LOCATION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use trellis_model::api::{Items, Problem, PublishRequest, Published, Version, VersionSummary};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// A publish that keeps losing to concurrent draft saves gives up after this many tries.
const PUBLISH_ATTEMPTS: usize = 3;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, publish)).routes(routes!(show))
}

#[utoipa::path(
    post,
    path = "/workflows/{id}/versions",
    operation_id = "publishVersion",
    tag = "versions",
    request_body(content = PublishRequest, description = "Optional: a note for the version"),
    responses(
        (
            status = 201,
            description = "Published as version `version` (1, 2, ...); `Location` names it",
            body = Published
        ),
        (status = 422, description = "The draft is invalid; `errors` lists every problem", body = Problem),
    )
)]
async fn publish(
    State(state): State<AppState>,
    auth: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let request: PublishRequest = optional_json(&body, "publish request")?;
    for _ in 0..PUBLISH_ATTEMPTS {
        let workflow = find(&state, id).await?;
        if workflow.archived {
            return Err(archived_error());
        }
        let report = validate_for_publish(&state, id, &workflow.draft.0).await?;
        if !report.errors.is_empty() {
            return Err(ApiError::invalid(
                format!("the draft cannot be published: it has {} problem(s); see `errors`", report.errors.len()),
                report.errors,
            ));
        }
        let version = NewVersion {
            note: request.note.clone(),
            published_by: auth.principal.name.clone(),
            now: chrono::Utc::now(),
            stuck_after: crate::slow::stuck_after(&workflow.draft.0),
        };
        match state.store.publish(id, workflow.draft_rev, &version).await? {
            WriteOutcome::Done(n) => return Ok(created(id, n)),
            // The draft changed between reading and publishing: validate the new one.
            WriteOutcome::Stale => continue,
            WriteOutcome::Archived => return Err(archived_error()),
            WriteOutcome::NotFound => return Err(workflow_not_found(id)),
        }
    }
    Err(ApiError::Conflict("the draft keeps changing while publishing; try again".into()))
}

fn created(id: Uuid, version: i64) -> Response {
    let location = format!("/api/v1/workflows/{id}/versions/{version}");
    let mut response = (StatusCode::CREATED, Json(Published { version })).into_response();
    response.headers_mut().insert(LOCATION, HeaderValue::from_str(&location).expect("ASCII"));
    response
}

#[utoipa::path(
    get,
    path = "/workflows/{id}/versions",
    operation_id = "listVersions",
    tag = "versions",
    responses((status = 200, description = "Every published version, oldest first", body = Items<VersionSummary>))
)]
async fn list(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Items<VersionSummary>>> {
    find(&state, id).await?;
    let items = state.store.list_versions(id).await?.into_iter().map(summary).collect();
    Ok(Json(Items { items }))
}

#[utoipa::path(
    get,
    path = "/workflows/{id}/versions/{version}",
    operation_id = "showVersion",
    tag = "versions",
    responses((status = 200, description = "The frozen definition of one version", body = Version))
)]
async fn show(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath((id, version)): ApiPath<(Uuid, i64)>,
) -> ApiResult<Json<Version>> {
    let record = state
        .store
        .get_version(id, version)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("workflow {id} has no version {version}")))?;
    Ok(Json(Version {
        workflow_id: record.workflow_id.to_string(),
        summary: VersionSummary {
            version: record.version,
            note: record.note,
            published_at: record.published_at,
            published_by: record.published_by,
        },
        definition: record.definition.0,
    }))
}

fn summary(v: VersionInfo) -> VersionSummary {
    VersionSummary { version: v.version, note: v.note, published_at: v.published_at, published_by: v.published_by }
}
