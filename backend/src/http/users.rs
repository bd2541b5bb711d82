//! User accounts, managed by admins (the CLI's `trellis user add` does the same offline).

use super::api_keys::bad_field;
use super::auth::{AsAdmin, Authed};
use super::error::{ApiError, ApiResult};
use super::extract::ApiJson;
use super::AppState;
use crate::auth::{check_username, password, Role};
use crate::store::NewUser;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use trellis_model::api::Problem;
use utoipa_axum::{router::OpenApiRouter, routes};
use serde::Deserialize;
use trellis_model::api::Me;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create))
}

/// `role` is `viewer`, `operator`, `editor` or `admin`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateUser {
    username: String,
    password: String,
    role: String,
}

#[utoipa::path(post, path = "/users", tag = "users", request_body = CreateUser, responses((status = 201, description = "Created", body = Me), (status = 409, description = "The username is taken", body = Problem, content_type = "application/problem+json")))]
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
    Ok((StatusCode::CREATED, Json(Me { id: user.id.to_string(), username: user.username, role: role.to_string() })))
}
