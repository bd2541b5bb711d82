//! The triggers page's calls: a workflow's triggers, creating, pausing, rotating and deleting
//! one, its delivery log, and the cron preview. Beside `api.rs`, whose `fetch` and `send` they use.

use crate::api::{fetch, send};
use crate::error::ApiError;
use crate::urls::{encode_component, API};
use gloo_net::http::Request;
use serde_json::Value;
use trellis_model::api::{CreatedTrigger, Delivery, FireTimes, Items, Page, RotatedSecret, Trigger};

pub async fn list(workflow: &str) -> Result<Vec<Trigger>, ApiError> {
    let url = format!("{API}/workflows/{}/triggers", encode_component(workflow));
    let page: Items<Trigger> = fetch(Request::get(&url).build()).await?;
    Ok(page.items)
}

/// `body`: `{"kind": "webhook"}` or `{"kind": "cron", "expression", "timezone"}`, and a `name`.
pub async fn create(workflow: &str, body: &Value) -> Result<CreatedTrigger, ApiError> {
    let url = format!("{API}/workflows/{}/triggers", encode_component(workflow));
    fetch(Request::post(&url).json(body)).await
}

pub async fn set_paused(id: &str, paused: bool) -> Result<Trigger, ApiError> {
    let url = format!("{API}/triggers/{}", encode_component(id));
    fetch(Request::patch(&url).json(&serde_json::json!({ "paused": paused }))).await
}

pub async fn delete(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/triggers/{}", encode_component(id))).build()).await.map(drop)
}

/// A new secret; the previous one verifies for `grace_ms` more.
pub async fn rotate(id: &str, grace_ms: u64) -> Result<RotatedSecret, ApiError> {
    let url = format!("{API}/triggers/{}/rotate-secret", encode_component(id));
    fetch(Request::post(&url).json(&serde_json::json!({ "grace_ms": grace_ms }))).await
}

pub async fn deliveries(id: &str) -> Result<Vec<Delivery>, ApiError> {
    let url = format!("{API}/triggers/{}/deliveries?limit=50", encode_component(id));
    let page: Page<Delivery> = fetch(Request::get(&url).build()).await?;
    Ok(page.items)
}

/// The next fire times of a schedule not yet saved, or why it is not valid.
pub async fn preview(expression: &str, timezone: &str) -> Result<FireTimes, ApiError> {
    let body = serde_json::json!({ "expression": expression, "timezone": timezone, "count": 5 });
    fetch(Request::post(&format!("{API}/triggers/preview")).json(&body)).await
}

/// Every workflow's triggers, each with its workflow's name.
pub async fn list_all() -> Result<Vec<Trigger>, ApiError> {
    let page: Items<Trigger> = fetch(Request::get(&format!("{API}/triggers")).build()).await?;
    Ok(page.items)
}
