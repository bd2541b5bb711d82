//! API keys for programs: created by admins, shown once, stored hashed, revocable.

use crate::auth::{api_key, Role};
use crate::http::middleware::authed::{AsAdmin, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::store::ApiKeyRecord;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use trellis_model::api::{ApiKey, CreateApiKey, CreatedApiKey, Items, Problem};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub const MAX_KEY_NAME_LEN: usize = 100;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(revoke))
}

#[utoipa::path(
    post,
    path = "/api-keys",
    operation_id = "createApiKey",
    tag = "api-keys",
    request_body = CreateApiKey,
    responses((status = 201, description = "Created; `key` is shown this once", body = CreatedApiKey))
)]
async fn create(
    State(state): State<AppState>,
    auth: Authed<AsAdmin>,
    ApiJson(body): ApiJson<CreateApiKey>,
) -> ApiResult<impl axum::response::IntoResponse> {
    let role: Role = body.role.parse().map_err(|e: String| bad_field("role", e))?;
    let name = body.name.trim();
    if name.is_empty() || name.chars().count() > MAX_KEY_NAME_LEN || name.chars().any(char::is_control) {
        return Err(bad_field("name", format!("the name must be 1-{MAX_KEY_NAME_LEN} printable characters")));
    }
    let key = api_key::generate();
    let record = ApiKeyRecord {
        id: Uuid::now_v7(),
        name: name.to_owned(),
        prefix: key.display_prefix,
        key_hash: key.hash,
        role,
        created_by: Some(auth.principal.name),
        created_at: chrono::Utc::now(),
    };
    state.store.insert_api_key(&record).await?;
    let created = CreatedApiKey { id: record.id.to_string(), name: record.name, role: record.role, key: key.secret };
    // The secret is in this answer only: no cache may keep it.
    Ok((StatusCode::CREATED, super::session::NO_STORE, Json(created)))
}

#[utoipa::path(
    get,
    path = "/api-keys",
    operation_id = "listApiKeys",
    tag = "api-keys",
    responses((status = 200, description = "Live keys, without their secrets", body = Items<ApiKey>))
)]
async fn list(State(state): State<AppState>, _: Authed<AsAdmin>) -> ApiResult<Json<Items<ApiKey>>> {
    let keys = state.store.list_api_keys().await?;
    let items = keys
        .into_iter()
        .map(|k| ApiKey {
            id: k.id.to_string(),
            name: k.name,
            prefix: k.prefix,
            role: k.role,
            created_by: k.created_by,
            created_at: k.created_at,
        })
        .collect();
    Ok(Json(Items { items }))
}

#[utoipa::path(
    delete,
    path = "/api-keys/{id}",
    operation_id = "revokeApiKey",
    tag = "api-keys",
    responses(
        (status = 204, description = "Revoked"),
        (status = 404, description = "No live key with this id", body = Problem),
    )
)]
async fn revoke(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    if state.store.revoke_api_key(id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no live API key with id {id}")))
    }
}

pub fn bad_field(field: &str, message: String) -> ApiError {
    ApiError::invalid(message.clone(), vec![trellis_model::Issue::new("invalid_field", message).path(field)])
}
