//! The audit trail of changes: a middleware on `/api/v1` that records every mutating
//! request (POST, PUT, PATCH, DELETE) after its handler ran (`GET /audit` reads it: see
//! `resources::audit_log`).
//!
//! Being a middleware, it covers routes added later without their handlers doing anything.
//! The caller comes from the `AuditSlot` the `Authed` extractor fills (no second
//! authentication); requests refused before that are recorded as `anonymous`. Only the
//! route template, the path's resource id, the status, a failure's problem `detail` and a
//! handler's `AuditNote` are kept: never a request or response body, so no password, key or
//! secret reaches the log.

use crate::audit::{Actor, AuditNote, AuditSlot};
use crate::http::AppState;
use crate::store::AuditRow;
use axum::body::{Body, HttpBody};
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use chrono::Utc;
use std::convert::Infallible;
use uuid::Uuid;

/// Answers up to this size are read for a failure's `detail` or a create's `id`; larger
/// ones (none of this API's problems or creates) are passed on untouched.
const MAX_INSPECTED_BODY: u64 = 64 * 1024;
/// A `detail` longer than this is cut, so a huge message cannot bloat the log.
const MAX_DETAIL_CHARS: usize = 1_000;
/// The external workers' polling and lease keeping: machine traffic every few seconds per
/// worker, changing no definition and no instance's course. Recorded only when refused;
/// what a worker does to an instance (complete, fail) is always recorded.
const WORKER_UPKEEP: [&str; 2] = ["POST /api/v1/tasks/poll", "POST /api/v1/tasks/{id}/heartbeat"];

/// The slot a handler's extractors fill; a fresh, unread one outside the middleware.
impl<S: Send + Sync> FromRequestParts<S> for AuditSlot {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(parts.extensions.get::<AuditSlot>().cloned().unwrap_or_default())
    }
}

/// The middleware: runs the handler, then queues one audit row for a mutating request.
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mutating = matches!(*request.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    // Unmatched paths have no route template and change nothing.
    let Some(route) = request.extensions().get::<MatchedPath>().map(|m| m.as_str().to_owned()) else {
        return next.run(request).await;
    };
    if !mutating {
        return next.run(request).await;
    }
    let at = Utc::now();
    let action = format!("{} {route}", request.method());
    let request_id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(crate::audit::clip);
    let (mut parts, body) = request.into_parts();
    let target = path_target(&mut parts).await;
    let slot = AuditSlot::default();
    parts.extensions.insert(slot.clone());

    let response = next.run(Request::from_parts(parts, body)).await;

    let status = response.status();
    // A method the route does not have, or the catch-all 404 of unknown API paths (which
    // axum matches as a wildcard route): no handler ran, nothing changed.
    if status == StatusCode::METHOD_NOT_ALLOWED || route.contains("{*") {
        return response;
    }
    if status.is_success() && (WORKER_UPKEEP.contains(&action.as_str()) || changes_nothing(&route)) {
        return response;
    }
    // The command line's single sign-on polls every few seconds until the person finishes at
    // the provider: only the poll that signs in (or is refused) is recorded.
    if status == StatusCode::ACCEPTED && action == DEVICE_POLL {
        return response;
    }
    let (response, found) = inspect(response, status, target.is_none()).await;
    let note = response.extensions().get::<AuditNote>().map(|note| note.0.chars().take(MAX_DETAIL_CHARS).collect());
    let actor = slot.actor().unwrap_or_else(Actor::anonymous);
    state.audit.record(AuditRow {
        id: Uuid::now_v7(),
        at,
        actor_id: actor.id,
        actor_name: actor.name,
        actor_role: actor.role,
        action,
        target: target.or(found.created_id),
        status: i32::from(status.as_u16()),
        detail: found.detail.or(note),
        request_id,
    });
    response
}

const DEVICE_POLL: &str = "POST /api/v1/auth/oidc/device/token";

/// Previews and checks (`…/preview`, `…/validate`) answer what an action would do and change
/// nothing: the cron preview asks at every keystroke, which would bury the log. Recorded only
/// when refused, like the workers' upkeep.
fn changes_nothing(route: &str) -> bool {
    route.ends_with("/preview") || route.ends_with("/validate")
}

/// The resource the path names: its first parameter (`{id}` on every route that has one).
async fn path_target(parts: &mut Parts) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, &()).await.ok()?;
    let target = params.iter().next().map(|(_, value)| value.to_owned());
    target
}

#[derive(Default)]
struct Found {
    detail: Option<String>,
    created_id: Option<String>,
}

/// Reads a failure's problem `detail`, or the `id` a create answered with, from a small
/// JSON answer, and rebuilds the response with the same bytes.
async fn inspect(response: Response, status: StatusCode, wants_id: bool) -> (Response, Found) {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("application/problem+json"));
    let small = response.body().size_hint().exact().is_some_and(|n| n <= MAX_INSPECTED_BODY);
    let interesting =
        status.is_client_error() || status.is_server_error() || (status == StatusCode::CREATED && wants_id);
    if !(is_json && small && interesting) {
        return (response, Found::default());
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_INSPECTED_BODY as usize).await else {
        // Cannot happen for a body of known, small size; the answer is lost either way.
        return (Response::from_parts(parts, Body::empty()), Found::default());
    };
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let text = |key: &str| json.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let found = if status == StatusCode::CREATED {
        // A secret is named, not numbered: its name is what the trail records.
        Found { detail: None, created_id: text("id").or_else(|| text("name")) }
    } else {
        Found { detail: text("detail").map(|d| d.chars().take(MAX_DETAIL_CHARS).collect()), created_id: None }
    };
    (Response::from_parts(parts, Body::from(bytes)), found)
}
