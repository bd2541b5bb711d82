//! The secrets calls (`/api/v1/secrets`): editors list names, admins add, rotate and delete.
//! No answer carries a value; the value typed into a form goes out once, in the request.

use crate::api::{fetch, send};
use crate::error::ApiError;
use crate::urls::{encode_component, API};
use gloo_net::http::Request;
use trellis_model::api::{CreateSecret, Items, Secret, UpdateSecret};

pub async fn list_secrets() -> Result<Vec<Secret>, ApiError> {
    let page: Items<Secret> = fetch(Request::get(&format!("{API}/secrets")).build()).await?;
    Ok(page.items)
}

pub async fn create_secret(body: &CreateSecret) -> Result<Secret, ApiError> {
    fetch(Request::post(&format!("{API}/secrets")).json(body)).await
}

pub async fn rotate_secret(name: &str, body: &UpdateSecret) -> Result<Secret, ApiError> {
    fetch(Request::put(&format!("{API}/secrets/{}", encode_component(name))).json(body)).await
}

pub async fn delete_secret(name: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/secrets/{}", encode_component(name))).build()).await.map(drop)
}
