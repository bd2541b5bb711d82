//! Calls for saved views (`/views`) and for comparing two runs.

use crate::api::{fetch, send};
use crate::error::ApiError;
use crate::urls::{encode_component, API};
use gloo_net::http::Request;
use trellis_model::api::{CreateView, InstancePage, Items, SavedView};

pub async fn list_views() -> Result<Vec<SavedView>, ApiError> {
    let list: Items<SavedView> = fetch(Request::get(&format!("{API}/views")).build()).await?;
    Ok(list.items)
}

pub async fn create_view(body: &CreateView) -> Result<SavedView, ApiError> {
    fetch(Request::post(&format!("{API}/views")).json(body)).await
}

pub async fn delete_view(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&format!("{API}/views/{}", encode_component(id))).build()).await.map(drop)
}

/// How many instances the view at `path` shows now (`saved_views::count_url`); `None` for a path
/// that is not the instances list.
pub async fn view_count(path: &str) -> Result<Option<i64>, ApiError> {
    let Some(url) = crate::saved_views::count_url(path) else { return Ok(None) };
    let page: InstancePage = fetch(Request::get(&url).build()).await?;
    Ok(Some(crate::saved_views::matched(path, &page.counts)))
}

/// The newest succeeded run of `workflow`, to compare a failure with.
pub async fn latest_success(workflow: &str) -> Result<Option<String>, ApiError> {
    let url = format!("{API}/instances?limit=1&status=succeeded&workflow={}", encode_component(workflow));
    let page: InstancePage = fetch(Request::get(&url).build()).await?;
    Ok(page.items.into_iter().next().map(|i| i.id))
}
