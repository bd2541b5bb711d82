//! The approvals calls (`/api/v1/approvals`): a page of the inbox, the header badge's count,
//! one approval, and a decision on it. Beside `api.rs`, whose `fetch` they use.

use crate::api::fetch;
use crate::error::ApiError;
use crate::urls;
use gloo_net::http::Request;
use trellis_model::api::{Approval, ApprovalCount, ApprovalList, DecisionRequest};

/// A page of `GET /approvals` at `url` (built by `urls::approval_list`).
pub async fn list(url: &str) -> Result<ApprovalList, ApiError> {
    fetch(Request::get(url).build()).await
}

/// Open approvals the signed-in person may decide now.
pub async fn count() -> Result<u64, ApiError> {
    let count: ApprovalCount = fetch(Request::get(&urls::approval_count()).build()).await?;
    Ok(count.mine)
}

pub async fn get(id: &str) -> Result<Approval, ApiError> {
    fetch(Request::get(&urls::approval(id)).build()).await
}

/// Approves or rejects; answers the approval as it stands after.
pub async fn decide(id: &str, body: &DecisionRequest) -> Result<Approval, ApiError> {
    fetch(Request::post(&urls::approval_decision(id)).json(body)).await
}
