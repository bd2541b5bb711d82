//! The admins' calls: users, API keys and the audit log. Beside `api.rs`, whose `send` and `decode` they use.

use crate::api::{decode, send};
use crate::error::ApiError;
use crate::urls::{encode_component, API};
use gloo_net::http::Request;
use trellis_model::api::{ApiKey, CreateApiKey, CreateUser, CreatedApiKey, Items, Me, UpdateUser, UserView};

pub async fn list_users() -> Result<Vec<UserView>, ApiError> {
    let page: Items<UserView> = decode(send(Request::get(&format!("{API}/users")).build()).await?).await?;
    Ok(page.items)
}

pub async fn create_user(body: &CreateUser) -> Result<Me, ApiError> {
    decode(send(Request::post(&format!("{API}/users")).json(body)).await?).await
}

pub async fn update_user(id: &str, body: &UpdateUser) -> Result<Me, ApiError> {
    decode(send(Request::patch(&format!("{API}/users/{}", encode_component(id))).json(body)).await?).await
}

pub async fn delete_user(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/users/{}", encode_component(id))).build()).await.map(drop)
}

pub async fn list_api_keys() -> Result<Vec<ApiKey>, ApiError> {
    let page: Items<ApiKey> = decode(send(Request::get(&format!("{API}/api-keys")).build()).await?).await?;
    Ok(page.items)
}

pub async fn create_api_key(body: &CreateApiKey) -> Result<CreatedApiKey, ApiError> {
    decode(send(Request::post(&format!("{API}/api-keys")).json(body)).await?).await
}

pub async fn revoke_api_key(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/api-keys/{}", encode_component(id))).build()).await.map(drop)
}

/// `GET /audit` with `query` (`actor=…&action=…&cursor=…`).
pub async fn audit(query: &str) -> Result<trellis_model::api::Page<trellis_model::api::AuditEntry>, ApiError> {
    decode(send(Request::get(&format!("{API}/audit?{query}")).build()).await?).await
}
