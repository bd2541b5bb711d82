//! The admins' calls: users, API keys, the audit log and retention. Beside `api.rs`, whose `fetch` and `send` they use.

use crate::api::{fetch, send};
use crate::error::ApiError;
use crate::urls::{encode_component, API};
use gloo_net::http::Request;
use trellis_model::api::{
    ApiKey, CreateApiKey, CreateUser, CreatedApiKey, Items, MappingPreview, MappingPreviewRequest, Me, UpdateUser,
    UserView,
};

pub async fn list_users() -> Result<Vec<UserView>, ApiError> {
    let page: Items<UserView> = fetch(Request::get(&format!("{API}/users")).build()).await?;
    Ok(page.items)
}

pub async fn create_user(body: &CreateUser) -> Result<Me, ApiError> {
    fetch(Request::post(&format!("{API}/users")).json(body)).await
}

pub async fn update_user(id: &str, body: &UpdateUser) -> Result<Me, ApiError> {
    fetch(Request::patch(&format!("{API}/users/{}", encode_component(id))).json(body)).await
}

pub async fn delete_user(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/users/{}", encode_component(id))).build()).await.map(drop)
}

pub async fn list_api_keys() -> Result<Vec<ApiKey>, ApiError> {
    let page: Items<ApiKey> = fetch(Request::get(&format!("{API}/api-keys")).build()).await?;
    Ok(page.items)
}

pub async fn create_api_key(body: &CreateApiKey) -> Result<CreatedApiKey, ApiError> {
    fetch(Request::post(&format!("{API}/api-keys")).json(body)).await
}

pub async fn revoke_api_key(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/api-keys/{}", encode_component(id))).build()).await.map(drop)
}

/// `GET /audit` with `query` (`actor=…&action=…&cursor=…`).
pub async fn audit(query: &str) -> Result<trellis_model::api::Page<trellis_model::api::AuditEntry>, ApiError> {
    fetch(Request::get(&format!("{API}/audit?{query}")).build()).await
}

/// The retention policy of `workflow`, or the default one.
pub async fn retention(workflow: Option<&str>) -> Result<trellis_model::api::Retention, ApiError> {
    fetch(Request::get(&retention_url(workflow, "")).build()).await
}

/// Saves `policy` (`{"succeeded_days": n | null, ...}`) for `workflow`, or as the default.
pub async fn put_retention(
    workflow: Option<&str>,
    policy: &serde_json::Value,
) -> Result<trellis_model::api::Retention, ApiError> {
    fetch(Request::put(&retention_url(workflow, "")).json(policy)).await
}

/// What `policy` would delete now if saved.
pub async fn preview_retention(
    workflow: Option<&str>,
    policy: &serde_json::Value,
) -> Result<trellis_model::api::RetentionPreview, ApiError> {
    fetch(Request::post(&retention_url(workflow, "/preview")).json(policy)).await
}

fn retention_url(workflow: Option<&str>, tail: &str) -> String {
    match workflow {
        Some(w) => format!("{API}/workflows/{}/retention{tail}", encode_component(w)),
        None => format!("{API}/retention{tail}"),
    }
}

/// What role the single sign-on group mapping gives these groups, and why.
pub async fn preview_mapping(body: &MappingPreviewRequest) -> Result<MappingPreview, ApiError> {
    fetch(Request::post(&format!("{API}/auth/oidc/mapping/preview")).json(body)).await
}

/// `GET /cluster`: processes, schema, hold, scheduled backups.
pub async fn cluster() -> Result<trellis_model::api::Cluster, ApiError> {
    fetch(Request::get(&format!("{API}/cluster")).build()).await
}

/// `POST /cluster/resume`: a held database fires schedules and claims work again.
pub async fn resume_cluster() -> Result<trellis_model::api::Cluster, ApiError> {
    fetch(Request::post(&format!("{API}/cluster/resume")).build()).await
}
