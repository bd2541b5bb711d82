//! Every call the SPA makes to the Trellis API. Components call these and never build requests.
//!
//! Auth rides on the HttpOnly session cookie the login response sets: fetch sends it on
//! same-origin requests by default, so no token is ever held in script-readable storage.

use crate::error::ApiError;
use crate::urls;
use gloo_net::http::{Request, Response};
use serde::de::DeserializeOwned;
use trellis_model::api::{CreateWorkflow, LoginRequest, Me, Page, TokenResponse, Workflow, WorkflowSummary};

pub async fn login(credentials: &LoginRequest) -> Result<TokenResponse, ApiError> {
    let response = send(Request::post(&urls::login()).json(credentials)).await?;
    decode(response).await
}

pub async fn logout() -> Result<(), ApiError> {
    send(Request::post(&urls::logout()).build()).await.map(drop)
}

pub async fn me() -> Result<Me, ApiError> {
    decode(send(Request::get(&urls::me()).build()).await?).await
}

pub async fn list_workflows(search: Option<&str>, cursor: Option<&str>) -> Result<Page<WorkflowSummary>, ApiError> {
    let url = urls::workflow_list(search, cursor, urls::PAGE_SIZE);
    decode(send(Request::get(&url).build()).await?).await
}

pub async fn create_workflow(body: &CreateWorkflow) -> Result<Workflow, ApiError> {
    decode(send(Request::post(&urls::workflows()).json(body)).await?).await
}

/// Sends a request and turns any non-2xx answer into the server's problem.
async fn send(request: Result<Request, gloo_net::Error>) -> Result<Response, ApiError> {
    let response = request.map_err(transport)?.send().await.map_err(transport)?;
    if response.ok() {
        return Ok(response);
    }
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    Err(ApiError::from_response(status, &body))
}

async fn decode<T: DeserializeOwned>(response: Response) -> Result<T, ApiError> {
    response.json().await.map_err(transport)
}

fn transport(err: gloo_net::Error) -> ApiError {
    ApiError::Transport(err.to_string())
}
