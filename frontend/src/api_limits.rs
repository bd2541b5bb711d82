//! The shared-limit calls (`/api/v1/limits`): everyone reads them with what they hold now;
//! editors make, change and delete them.

use crate::api::{fetch, send};
use crate::error::ApiError;
use crate::urls::{encode_component, API};
use gloo_net::http::Request;
use trellis_model::api::{SharedLimit, SharedLimitList, SharedLimitSpec};

pub async fn list_limits() -> Result<Vec<SharedLimit>, ApiError> {
    let list: SharedLimitList = fetch(Request::get(&format!("{API}/limits")).build()).await?;
    Ok(list.items)
}

pub async fn create_limit(body: &SharedLimitSpec) -> Result<SharedLimit, ApiError> {
    fetch(Request::post(&format!("{API}/limits")).json(body)).await
}

pub async fn update_limit(body: &SharedLimitSpec) -> Result<SharedLimit, ApiError> {
    fetch(Request::put(&format!("{API}/limits/{}", encode_component(&body.name))).json(body)).await
}

pub async fn delete_limit(name: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/limits/{}", encode_component(name))).build()).await.map(drop)
}
