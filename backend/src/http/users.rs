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
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use trellis_model::api::Me;

pub fn router() -> Router<AppState> {
    Router::new().route("/users", post(create))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateUser {
    username: String,
    password: String,
    role: String,
}

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
