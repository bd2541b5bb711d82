//! Saved views: a named instances-list filter, kept on the server so a team can share it.
//!
//! Every signed-in role may keep private views: a view is a bookmark of a filter the caller can
//! already read, it changes no run. Sharing needs an operator: a shared view shows up in everyone's
//! navigation, a change others see, and viewers are read-only by the contract. A view is deleted
//! by its owner or an admin; another caller's private view is a 404 to them (they cannot see it),
//! a shared one a 403. A name taken by the same owner is a 409 (as a duplicate user or secret is).
//! The audit trail records creations and deletions (`middleware/audit_trail.rs`).

use super::api_keys::bad_field;
use crate::auth::{Principal, Role};
use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::store::ViewRow;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use trellis_model::api::{CreateView, Items, Problem, SavedView, ViewOwner};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub const MAX_VIEW_NAME_LEN: usize = 100;
/// Longer than any filter the list page writes; short of the edge's 2048-byte path limit.
pub const MAX_VIEW_PATH_LEN: usize = 2000;
/// The one page a view may open: the instances list (a path, never an address elsewhere).
pub const VIEW_PAGE: &str = "/instances";
/// The least role that may share a view with everyone (see the module's doc).
const SHARE_ROLE: Role = Role::Operator;
/// Views one user or API key may keep: the navigation lists them all, so a bound keeps it usable
/// (and one caller from filling the table).
pub const MAX_VIEWS_PER_OWNER: usize = 100;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(delete))
}

#[utoipa::path(
    get,
    path = "/views",
    operation_id = "listViews",
    tag = "views",
    responses((status = 200, description = "The caller's views and everyone's shared ones, by name", body = Items<SavedView>))
)]
async fn list(State(state): State<AppState>, auth: Authed<AsViewer>) -> ApiResult<Json<Items<SavedView>>> {
    let rows = state.store.list_views(&auth.principal.id).await?;
    Ok(Json(Items { items: rows.into_iter().map(shown).collect() }))
}

#[utoipa::path(
    post,
    path = "/views",
    operation_id = "createView",
    tag = "views",
    request_body = CreateView,
    responses(
        (status = 201, description = "Saved", body = SavedView),
        (status = 403, description = "Only operators and above may share a view", body = Problem),
        (status = 409, description = "The caller already has a view of that name, or as many views as one may keep", body = Problem),
        (status = 422, description = "A name or path that cannot be saved (`errors` names the field)", body = Problem),
    )
)]
async fn create(
    State(state): State<AppState>,
    auth: Authed<AsViewer>,
    ApiJson(body): ApiJson<CreateView>,
) -> ApiResult<(StatusCode, Json<SavedView>)> {
    let name = checked_name(&body.name)?;
    let path = checked_path(&body.path)?;
    if body.shared && auth.principal.role < SHARE_ROLE {
        return Err(ApiError::Forbidden("viewers keep private views; sharing one needs the operator role".into()));
    }
    let Principal { id: owner_id, name: owner_name, .. } = auth.principal;
    let owned = state.store.list_views(&owner_id).await?.iter().filter(|v| v.owner_id == owner_id).count();
    if owned >= MAX_VIEWS_PER_OWNER {
        return Err(ApiError::Conflict(format!(
            "you have {owned} views, the most one may keep ({MAX_VIEWS_PER_OWNER}); delete one first"
        )));
    }
    let row = ViewRow {
        id: Uuid::now_v7(),
        owner_id,
        owner_name,
        name,
        path,
        shared: body.shared,
        created_at: chrono::Utc::now(),
    };
    if !state.store.insert_view(&row).await? {
        return Err(ApiError::Conflict(format!("you already have a view named `{}`", row.name)));
    }
    Ok((StatusCode::CREATED, Json(shown(row))))
}

#[utoipa::path(
    delete,
    path = "/views/{id}",
    operation_id = "deleteView",
    tag = "views",
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "A shared view of someone else (only its owner or an admin deletes it)", body = Problem),
        (status = 404, description = "No view with this id that the caller can see", body = Problem),
    )
)]
async fn delete(
    State(state): State<AppState>,
    auth: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    let missing = || ApiError::NotFound(format!("no view with id {id}"));
    let view = state.store.view(id).await?.ok_or_else(missing)?;
    let own = view.owner_id == auth.principal.id;
    let admin = auth.principal.role == Role::Admin;
    if !own && !admin {
        // Someone else's private view is not the caller's to know of.
        return Err(if view.shared {
            ApiError::Forbidden("only its owner or an admin deletes a view".into())
        } else {
            missing()
        });
    }
    if state.store.delete_view(id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(missing())
    }
}

fn checked_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_VIEW_NAME_LEN || name.chars().any(char::is_control) {
        return Err(bad_field("name", format!("the name must be 1-{MAX_VIEW_NAME_LEN} printable characters")));
    }
    Ok(name.to_owned())
}

/// A view opens a page of this app, never an address elsewhere: the path is the instances
/// list itself or it with a query (`/instances?...`), so `//evil.example`, `https://...` or
/// `/instances.evil` are refused before anyone follows them.
pub fn checked_path(path: &str) -> ApiResult<String> {
    let on_list = path == VIEW_PAGE || path.strip_prefix(VIEW_PAGE).is_some_and(|rest| rest.starts_with('?'));
    let plain = !path.chars().any(|c| c.is_control() || c.is_whitespace() || c == '\\');
    if !on_list || !plain {
        return Err(bad_field("path", format!("the path must be `{VIEW_PAGE}` or `{VIEW_PAGE}?<filters>`")));
    }
    if path.chars().count() > MAX_VIEW_PATH_LEN {
        return Err(bad_field("path", format!("the path must be at most {MAX_VIEW_PATH_LEN} characters")));
    }
    Ok(path.to_owned())
}

fn shown(row: ViewRow) -> SavedView {
    SavedView {
        id: row.id.to_string(),
        name: row.name,
        path: row.path,
        shared: row.shared,
        owner: ViewOwner { id: row.owner_id, name: row.owner_name },
        created_at: row.created_at,
    }
}
