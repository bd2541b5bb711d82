//! User accounts, managed by admins (the CLI's `trellis user add` does the same offline).
//!
//! Changing a user takes effect on their next request: a token's role is read fresh from
//! the users table, a new password ends every session, a deleted or disabled user's sessions
//! go with it, and a disabled user's API keys stop working. At least one enabled admin always
//! remains.

use super::api_keys::bad_field;
use crate::auth::{check_username, password, Role};
use crate::http::middleware::authed::{AsAdmin, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::store::NewUser;
use crate::store::UserRecord;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use trellis_model::api::{CreateUser, Items, Me, Problem, UpdateUser, UserView};
use trellis_model::UserSource;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(update, delete))
}

#[utoipa::path(
    get,
    path = "/users",
    operation_id = "listUsers",
    tag = "users",
    responses((status = 200, description = "Every user, by username", body = Items<UserView>))
)]
async fn list(State(state): State<AppState>, _: Authed<AsAdmin>) -> ApiResult<Json<Items<UserView>>> {
    let users = state.store.list_users().await?;
    Ok(Json(Items { items: users.iter().map(view).collect() }))
}

fn view(u: &UserRecord) -> UserView {
    UserView {
        id: u.id.to_string(),
        username: u.username.clone(),
        role: u.role,
        disabled: u.disabled_at.is_some(),
        created_at: u.created_at,
        source: u.source,
        subject: u.subject.clone(),
        groups: u.groups.0.clone(),
    }
}

#[utoipa::path(
    post,
    path = "/users",
    operation_id = "createUser",
    tag = "users",
    request_body = CreateUser,
    responses(
        (status = 201, description = "Created", body = Me),
        (status = 409, description = "The username is taken", body = Problem),
    )
)]
async fn create(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiJson(body): ApiJson<CreateUser>,
) -> ApiResult<(StatusCode, Json<Me>)> {
    let role: Role = body.role.parse().map_err(|e: String| bad_field("role", e))?;
    check_username(&body.username).map_err(|e| bad_field("username", e))?;
    password::check_strength(&body.password).map_err(|e| bad_field("password", e))?;
    let user = NewUser::new(&body.username, password::hash(body.password).await?, role);
    if !state.store.insert_user(&user).await? {
        return Err(ApiError::Conflict(format!("a user named `{}` already exists", body.username)));
    }
    Ok((StatusCode::CREATED, Json(Me { id: user.id.to_string(), username: user.username, role })))
}

#[utoipa::path(
    patch,
    path = "/users/{id}",
    operation_id = "updateUser",
    tag = "users",
    request_body = UpdateUser,
    responses(
        (status = 200, description = "Changed; a new password has ended the user's sessions", body = Me),
        (status = 404, description = "No such user", body = Problem),
        (status = 409, description = "Admins cannot lower their own role or disable themselves; the last enabled admin stays one", body = Problem),
    )
)]
async fn update(
    State(state): State<AppState>,
    auth: Authed<AsAdmin>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<UpdateUser>,
) -> ApiResult<Json<Me>> {
    let role = body.role.as_deref().map(str::parse::<Role>).transpose().map_err(|e| bad_field("role", e))?;
    if let Some(p) = &body.password {
        password::check_strength(p).map_err(|e| bad_field("password", e))?;
    }
    if role.is_none() && body.password.is_none() && body.disabled.is_none() && body.groups.is_none() {
        return Err(bad_field("role", "send a new `role`, a new `password`, `disabled`, `groups`, or several".into()));
    }
    let groups = body.groups.as_deref().map(checked_groups).transpose()?;
    let user = state.store.user_by_id(id).await?.ok_or_else(|| no_such_user(id))?;
    if user.source == UserSource::Oidc {
        // What the provider says wins at the next sign-in: changing it here would not hold.
        if body.password.is_some() {
            return Err(bad_field(
                "password",
                format!("`{}` signs in through single sign-on and has no password here", user.username),
            ));
        }
        if groups.is_some() {
            return Err(bad_field(
                "groups",
                format!("`{}`'s groups come from the provider at each sign-in", user.username),
            ));
        }
    }
    // So that at least one admin always remains: the caller stays one.
    let myself = auth.principal.id == id.to_string();
    if role.is_some_and(|r| r < Role::Admin) && myself {
        return Err(ApiError::Conflict("you cannot lower your own role; another admin can".into()));
    }
    if body.disabled == Some(true) && myself {
        return Err(ApiError::Conflict("you cannot disable your own account; another admin can".into()));
    }
    let demoted = role.is_some_and(|r| r < Role::Admin) || body.disabled == Some(true);
    if demoted
        && user.role == Role::Admin
        && user.disabled_at.is_none()
        && state.store.count_enabled_admins().await? <= 1
    {
        return Err(ApiError::Conflict(format!(
            "`{}` is the last enabled admin; make another user an admin first",
            user.username
        )));
    }
    // Hashed before anything is written: a hash refused under load (503) must not leave the
    // role changed and the password not.
    let new_hash = match body.password {
        Some(p) => Some(password::hash(p).await?),
        None => None,
    };
    if let Some(role) = role {
        state.store.set_role(id, role).await?;
    }
    if let Some(hash) = new_hash {
        state.store.set_password(&user.username, &hash).await?;
    }
    if let Some(groups) = &groups {
        state.store.set_groups(id, groups).await?;
    }
    if let Some(disabled) = body.disabled {
        let at = disabled.then(chrono::Utc::now);
        // Disabling again keeps the first time it was done.
        if disabled != user.disabled_at.is_some() {
            state.store.set_disabled(id, at).await?;
        }
    }
    let role = role.unwrap_or(user.role);
    Ok(Json(Me { id: id.to_string(), username: user.username, role }))
}

#[utoipa::path(
    delete,
    path = "/users/{id}",
    operation_id = "deleteUser",
    tag = "users",
    responses(
        (status = 204, description = "Deleted, and with it every session of the user"),
        (status = 404, description = "No such user", body = Problem),
        (status = 409, description = "Admins cannot delete themselves", body = Problem),
    )
)]
async fn delete(
    State(state): State<AppState>,
    auth: Authed<AsAdmin>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    if auth.principal.id == id.to_string() {
        return Err(ApiError::Conflict("you cannot delete your own account; another admin can".into()));
    }
    if state.store.delete_user(id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(no_such_user(id))
    }
}

/// Groups an admin gives a local user: names as the provider would send them.
fn checked_groups(groups: &[String]) -> ApiResult<Vec<String>> {
    if groups.len() > 100 {
        return Err(bad_field("groups", "at most 100 groups".into()));
    }
    let mut kept: Vec<String> = Vec::with_capacity(groups.len());
    for group in groups {
        let group = group.trim();
        if group.is_empty() || group.chars().count() > 200 || group.chars().any(char::is_control) {
            return Err(bad_field("groups", "group names are 1-200 characters without control characters".into()));
        }
        if !kept.iter().any(|g| g == group) {
            kept.push(group.to_owned());
        }
    }
    Ok(kept)
}

fn no_such_user(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no user with id {id}"))
}
