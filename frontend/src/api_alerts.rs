//! The alerts page's calls (`/api/v1/alerts`): rules, creating one (its signing secret comes
//! back this once), deleting, a test delivery sent now, and a rule's delivery log.

use crate::api::{fetch, send};
use crate::error::ApiError;
use crate::urls::{encode_component, API};
use gloo_net::http::Request;
use trellis_model::api::{AlertDelivery, AlertRule, AlertTestResult, CreatedAlertRule, Items, NewAlertRule};

pub async fn list() -> Result<Vec<AlertRule>, ApiError> {
    let page: Items<AlertRule> = fetch(Request::get(&format!("{API}/alerts")).build()).await?;
    Ok(page.items)
}

pub async fn create(body: &NewAlertRule) -> Result<CreatedAlertRule, ApiError> {
    fetch(Request::post(&format!("{API}/alerts")).json(body)).await
}

pub async fn delete(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/alerts/{}", encode_component(id))).build()).await.map(drop)
}

pub async fn send_test(id: &str) -> Result<AlertTestResult, ApiError> {
    fetch(Request::post(&format!("{API}/alerts/{}/test", encode_component(id))).build()).await
}

pub async fn deliveries(id: &str) -> Result<Vec<AlertDelivery>, ApiError> {
    let url = format!("{API}/alerts/{}/deliveries", encode_component(id));
    let page: Items<AlertDelivery> = fetch(Request::get(&url).build()).await?;
    Ok(page.items)
}
