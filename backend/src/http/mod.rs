//! The HTTP surface: the resources (`resources/`, one module each with `router()`), merged
//! under `/api/v1` beside the health probes and the single-page app, inside the middleware
//! every request passes (`middleware/`); `openapi` documents what is served.

pub mod middleware;
pub mod openapi;
pub mod resources;

use crate::auth::jwt::TokenKeys;
use crate::config::ServeConfig;
use crate::engine::Engine;
use crate::store::DynStore;
use axum::extract::DefaultBodyLimit;
use axum::http::{header, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use middleware::error::{problem, problem_response};
use middleware::{audit_trail, csrf, edge, headers, sandbox_wait};
use resources::{
    alerts, api_keys, approvals, audit_log, bulk_jobs, cluster, event_streams, failures, hooks, instances, limits,
    probes, retention, scripts, secrets, session, single_sign_on, spa, stats, tasks, trigger_management, users,
    versions, views, workflows,
};
use std::sync::Arc;
use std::time::Duration;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::trace::TraceLayer;
use trellis_model::Limits;
use utoipa_axum::router::OpenApiRouter;

/// What every handler can reach. Cheap to clone: everything is behind an `Arc`.
#[derive(Clone)]
pub struct AppState {
    pub store: DynStore,
    pub engine: Arc<Engine>,
    pub tokens: Arc<TokenKeys>,
    pub serve: Arc<ServeConfig>,
    pub limits: Limits,
    /// Queues audit rows for the background writer (see `crate::audit`).
    pub audit: Arc<crate::audit::AuditLog>,
    /// Failed sign-ins per username and per address (see `crate::auth::throttle`).
    pub sign_in: Arc<crate::auth::throttle::SignInThrottle>,
    /// Single sign-on, when a provider is configured (see `crate::auth::oidc`).
    pub oidc: Option<Arc<crate::auth::oidc::Oidc>>,
}

/// Every `/api/v1` route, with its OpenAPI operation. This is the one place routes are
/// registered: each module's `router()` adds its handlers with `routes!(handler)` (never
/// axum's `.route`), so what is served is what `openapi.json` documents.
fn api_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(session::router())
        .merge(single_sign_on::router())
        .merge(workflows::router())
        .merge(versions::router())
        .merge(api_keys::router())
        .merge(users::router())
        .merge(instances::router())
        .merge(failures::router())
        .merge(stats::router())
        .merge(event_streams::router())
        .merge(tasks::router())
        .merge(trigger_management::router())
        .merge(audit_log::router())
        .merge(bulk_jobs::router())
        .merge(retention::router())
        .merge(scripts::router())
        .merge(secrets::router())
        .merge(views::router())
        .merge(limits::router())
        .merge(approvals::router())
        .merge(alerts::router())
        .merge(cluster::router())
        .merge(openapi::router())
}

/// The routes outside `/api/v1`: probes, metrics and webhook deliveries.
fn root_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().merge(probes::router()).merge(hooks::router())
}

/// Everything served, as one document (before `openapi::build` completes it).
pub fn documented_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().nest("/api/v1", api_routes()).merge(root_routes())
}

pub fn router(state: AppState) -> Router {
    let (api, _) = api_routes().split_for_parts();
    let api = api
        .fallback(|| async { not_found() })
        .method_not_allowed_fallback(|| async { method_not_allowed() })
        // Inside the audit layer, so refused cross-site requests are recorded too.
        .layer(axum::middleware::from_fn_with_state(state.clone(), csrf::guard))
        // Last, so it wraps every route above, including ones merged in later.
        .layer(axum::middleware::from_fn_with_state(state.clone(), audit_trail::record));
    let (root, _) = root_routes().split_for_parts();
    Router::new()
        .nest("/api/v1", api)
        .merge(root)
        .fallback(spa::serve)
        .layer(axum::middleware::from_fn_with_state(state.clone(), sandbox_wait::bound))
        .layer(axum::middleware::from_fn(edge::problem_errors))
        .layer(axum::middleware::from_fn_with_state(state.clone(), edge::guard_uri))
        .layer(DefaultBodyLimit::max(state.serve.max_body_bytes))
        .layer(SetSensitiveRequestHeadersLayer::new([header::AUTHORIZATION, header::COOKIE]))
        .layer(CatchPanicLayer::custom(|_| internal_error()))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http().make_span_with(request_span).on_response(log_response))
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        // Outermost, so every answer has them, a panic's 500 included.
        .layer(axum::middleware::from_fn(headers::secure))
        .with_state(state)
}

fn request_span<B>(request: &Request<B>) -> tracing::Span {
    let request_id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
    tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id)
}

fn log_response<B>(response: &Response<B>, latency: Duration, _span: &tracing::Span) {
    tracing::debug!(status = response.status().as_u16(), latency_ms = latency.as_secs_f64() * 1e3, "response");
}

pub fn not_found() -> Response {
    problem_response(&problem(StatusCode::NOT_FOUND, "no such API route".into(), vec![]))
}

fn method_not_allowed() -> Response {
    problem_response(&problem(StatusCode::METHOD_NOT_ALLOWED, "this route does not support that method".into(), vec![]))
}

fn internal_error() -> Response {
    tracing::error!("a request handler panicked");
    problem_response(&problem(
        StatusCode::INTERNAL_SERVER_ERROR,
        "an unexpected error occurred; it has been logged".into(),
        vec![],
    ))
}
