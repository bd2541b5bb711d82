//! Every call the SPA makes to the Trellis API. Components call these and never build requests.
//!
//! Auth rides on the HttpOnly session cookie the login response sets: fetch sends it on
//! same-origin requests by default, so no token is ever held in script-readable storage.

use crate::error::ApiError;
use crate::urls;
use gloo_net::http::{Request, Response};
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::rc::Rc;
use trellis_model::api::{
    AuthProviders, CreateWorkflow, InstanceDetail, InstancePage, Items, LoginRequest, Me, Page, PublishRequest,
    Published, SignalRequest, SignedOut, StartInstance, Started, TokenResponse, UpdateWorkflow, Version,
    VersionSummary, Workflow, WorkflowSummary,
};
use trellis_model::Definition;

/// A 401 here is a wrong password, not a lost session: it goes to the form, not to sign-in.
pub async fn login(credentials: &LoginRequest) -> Result<TokenResponse, ApiError> {
    decode(exchange(Request::post(&urls::login()).json(credentials)).await?).await
}

/// Ends the session; for a single sign-on session, answers the provider's end-session URL,
/// where the browser goes next to sign out there too.
pub async fn logout() -> Result<Option<String>, ApiError> {
    let response = send(Request::post(&urls::logout()).build()).await?;
    if response.status() != 200 {
        return Ok(None);
    }
    let said: SignedOut = decode(response).await?;
    Ok(said.end_session_url)
}

/// How one may sign in here (asked before signing in: a 401 means nothing here).
pub async fn providers() -> Result<AuthProviders, ApiError> {
    decode(exchange(Request::get(&urls::providers()).build()).await?).await
}

pub async fn me() -> Result<Me, ApiError> {
    fetch(Request::get(&urls::me()).build()).await
}

pub async fn list_workflows(
    search: Option<&str>,
    cursor: Option<&str>,
    archived: bool,
) -> Result<Page<WorkflowSummary>, ApiError> {
    let url = urls::workflow_list(search, cursor, urls::PAGE_SIZE, archived);
    fetch(Request::get(&url).build()).await
}

/// The most workflows a workflow picker offers.
pub const WORKFLOW_CHOICES: usize = 2_000;

/// `(id, name)` of every workflow (archived ones too when `archived`), by name, page after page
/// up to `cap`: the choices of a workflow picker, which must not stop at the first page.
pub async fn workflow_names(archived: bool, cap: usize) -> Result<Vec<(String, String)>, ApiError> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = list_workflows(None, cursor.as_deref(), archived).await?;
        all.extend(page.items.into_iter().map(|w| (w.id, w.name)));
        cursor = page.next_cursor;
        if cursor.is_none() || all.len() >= cap {
            break;
        }
    }
    all.sort_by_cached_key(|w| w.1.to_lowercase());
    Ok(all)
}

pub async fn create_workflow(body: &CreateWorkflow) -> Result<Workflow, ApiError> {
    fetch(Request::post(&urls::workflows()).json(body)).await
}

pub async fn get_workflow(id: &str) -> Result<Workflow, ApiError> {
    fetch(Request::get(&urls::workflow(id)).build()).await
}

pub async fn update_workflow(id: &str, body: &UpdateWorkflow) -> Result<Workflow, ApiError> {
    fetch(Request::patch(&urls::workflow(id)).json(body)).await
}

pub async fn set_archived(id: &str, archived: bool) -> Result<Workflow, ApiError> {
    fetch(Request::post(&urls::archive(id, archived)).build()).await
}

/// Saves the draft if the server still holds revision `etag`; `None` overwrites whatever is there.
pub async fn save_draft(id: &str, etag: Option<&str>, draft: &Definition) -> Result<Workflow, ApiError> {
    let request = Request::put(&urls::draft(id)).header("If-Match", etag.unwrap_or("*")).json(draft);
    fetch(request).await
}

pub async fn publish(id: &str, note: Option<String>) -> Result<Published, ApiError> {
    fetch(Request::post(&urls::versions(id)).json(&PublishRequest { note })).await
}

pub async fn list_versions(id: &str) -> Result<Vec<VersionSummary>, ApiError> {
    let page: Items<VersionSummary> = fetch(Request::get(&urls::versions(id)).build()).await?;
    Ok(page.items)
}

pub async fn get_version(id: &str, n: i64) -> Result<Version, ApiError> {
    fetch(Request::get(&urls::version(id, n)).build()).await
}

pub async fn start_instance(workflow: &str, body: &StartInstance) -> Result<Started, ApiError> {
    fetch(Request::post(&urls::start_instance(workflow)).json(body)).await
}

pub async fn get_instance(id: &str) -> Result<InstanceDetail, ApiError> {
    fetch(Request::get(&urls::instance(id)).build()).await
}

pub async fn cancel_instance(id: &str) -> Result<(), ApiError> {
    send(Request::post(&urls::instance_action(id, "cancel")).build()).await.map(drop)
}

pub async fn signal_instance(id: &str, body: &SignalRequest) -> Result<(), ApiError> {
    send(Request::post(&urls::instance_action(id, "signal")).json(body)).await.map(drop)
}

/// A page of a map node's items, at `url` (built by `urls::map_items`).
pub async fn map_items(url: &str) -> Result<trellis_model::api::MapItemPage, ApiError> {
    fetch(Request::get(url).build()).await
}

/// `GET /instances` at `url`, built by `InstanceFilter::api_url`.
pub async fn list_instances(url: &str) -> Result<InstancePage, ApiError> {
    fetch(Request::get(url).build()).await
}

thread_local! {
    /// What the app does when a call is answered 401 (set by the layout: go to sign-in).
    static ON_UNAUTHORIZED: RefCell<Option<Rc<dyn Fn()>>> = RefCell::new(None);
}

/// Sets (or with `None` removes) what happens when any call but signing in is answered 401.
pub fn on_unauthorized(hook: Option<Rc<dyn Fn()>>) {
    ON_UNAUTHORIZED.with(|h| *h.borrow_mut() = hook);
}

/// The typed call every API function makes: sends `request` and decodes a 2xx answer as `T`.
pub(crate) async fn fetch<T: DeserializeOwned>(request: Result<Request, gloo_net::Error>) -> Result<T, ApiError> {
    decode(send(request).await?).await
}

/// Sends a request and turns any non-2xx answer into the server's problem; a 401 (the session is
/// gone) also runs the `on_unauthorized` hook.
pub(crate) async fn send(request: Result<Request, gloo_net::Error>) -> Result<Response, ApiError> {
    exchange(request).await.map_err(signed_out_on_401)
}

/// Runs the `on_unauthorized` hook when `err` is a 401; hands `err` on.
fn signed_out_on_401(err: ApiError) -> ApiError {
    if err.is_unauthorized() {
        let hook = ON_UNAUTHORIZED.with(|h| h.borrow().clone());
        if let Some(hook) = hook {
            hook();
        }
    }
    err
}

/// Sends a request; a non-2xx answer is the server's problem.
async fn exchange(request: Result<Request, gloo_net::Error>) -> Result<Response, ApiError> {
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

// --- Instance page actions (issue 13): pause, resume, retry, purge ---

pub async fn pause_instance(id: &str) -> Result<InstanceDetail, ApiError> {
    fetch(Request::post(&urls::instance_action(id, "pause")).build()).await
}

pub async fn resume_instance(id: &str) -> Result<InstanceDetail, ApiError> {
    fetch(Request::post(&urls::instance_action(id, "resume")).build()).await
}

/// 200 running again, or 202 queued for a slot; both answer with the instance.
pub async fn retry_instance(id: &str, body: &trellis_model::api::RetryRequest) -> Result<InstanceDetail, ApiError> {
    fetch(Request::post(&urls::instance_action(id, "retry")).json(body)).await
}

/// `DELETE /instances/{id}`: a finished instance with its whole history.
pub async fn purge_instance(id: &str) -> Result<(), ApiError> {
    send(Request::delete(&urls::instance(id)).build()).await.map(drop)
}

/// `GET /instances/{id}/queue`: which limit holds a queued instance, or its ready nodes.
pub async fn instance_queue(id: &str) -> Result<trellis_model::api::QueuePlace, ApiError> {
    fetch(Request::get(&urls::instance_action(id, "queue")).build()).await
}

// --- Bulk actions on the instances list (issue 13) ---

/// `POST /instances/{action}` with a bulk request body (see `bulk::request`).
pub async fn bulk(
    action: &str,
    body: &trellis_model::api::BulkRequest,
) -> Result<trellis_model::api::BulkAnswer, ApiError> {
    fetch(Request::post(&format!("{}/instances/{action}", urls::API)).json(body)).await
}

pub async fn get_job(id: &str) -> Result<trellis_model::api::Job, ApiError> {
    let url = format!("{}/jobs/{}", urls::API, urls::encode_component(id));
    fetch(Request::get(&url).build()).await
}

pub async fn cancel_job(id: &str) -> Result<trellis_model::api::Job, ApiError> {
    let url = format!("{}/jobs/{}/cancel", urls::API, urls::encode_component(id));
    fetch(Request::post(&url).build()).await
}

/// `GET /jobs`: the most recent bulk jobs, newest first.
pub async fn list_jobs() -> Result<trellis_model::api::Page<trellis_model::api::Job>, ApiError> {
    fetch(Request::get(&format!("{}/jobs?limit=100", urls::API)).build()).await
}

/// `GET /stats/instances` with `query` (`since=…&bucket=…`).
pub async fn instance_stats(query: &str) -> Result<trellis_model::api::InstanceStats, ApiError> {
    fetch(Request::get(&format!("{}/stats/instances?{query}", urls::API)).build()).await
}

/// `GET /failures` with `query` (`since=…&workflow=…`).
pub async fn failures(query: &str) -> Result<trellis_model::api::FailureReport, ApiError> {
    fetch(Request::get(&format!("{}/failures?{query}", urls::API)).build()).await
}

// --- Scripts (issue 16) ---

/// `POST /scripts/preview`: the script's output and logs, or (a 422 naming a failure) why it
/// failed, where, and what it logged first. Other refusals (an invalid config, 403) are errors.
pub async fn preview_script(
    body: &trellis_model::api::ScriptPreviewRequest,
) -> Result<Result<trellis_model::api::ScriptPreview, trellis_model::api::ScriptProblem>, ApiError> {
    let url = format!("{}/scripts/preview", urls::API);
    let response = Request::post(&url).json(body).map_err(transport)?.send().await.map_err(transport)?;
    if response.ok() {
        return decode(response).await.map(Ok);
    }
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    match serde_json::from_str::<trellis_model::api::ScriptProblem>(&text) {
        Ok(failed) if status == 422 => Ok(Err(failed)),
        _ => Err(signed_out_on_401(ApiError::from_response(status, &text))),
    }
}
