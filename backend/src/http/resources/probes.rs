//! Probes for orchestrators: liveness says the process answers, readiness that the
//! database does too; and `/metrics` for Prometheus, behind `TRELLIS_METRICS` (it names
//! workflows and shows load, so by default only a bearer credential reads it).

use crate::config::MetricsAccess;
use crate::digest::sha256;
use crate::http::middleware::authed::{bearer, AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use trellis_model::api::{Health, Problem, Ready};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(healthz)).routes(routes!(readyz)).routes(routes!(metrics))
}

#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "checkLiveness",
    tag = "operations",
    responses((status = 200, description = "The process answers", body = Health))
)]
async fn healthz() -> Json<Health> {
    Json(Health { status: "ok".into() })
}

/// How long `/readyz` waits for the database before answering 503.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_millis(400);

#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "checkReadiness",
    tag = "operations",
    responses(
        (status = 200, description = "The database answers too", body = Ready),
        (status = 503, description = "The database is unreachable", body = Problem),
    )
)]
async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Ready>> {
    // Bounded: a load balancer asks because it wants an answer now, and a database that is
    // away makes the pool wait for its whole acquire timeout.
    match tokio::time::timeout(READY_WITHIN, state.store.ping()).await {
        Ok(answer) => answer.map_err(|e| ApiError::Unavailable(e.to_string()))?,
        Err(_) => return Err(ApiError::Unavailable(format!("the database did not answer within {READY_WITHIN:?}"))),
    }
    Ok(Json(Ready { status: "ready".into(), database: state.store.backend().into() }))
}

/// OpenMetrics text, which Prometheus scrapes natively.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "showMetrics",
    tag = "operations",
    responses(
        (
            status = 200,
            description = "Prometheus/OpenMetrics text",
            body = String,
            content_type = "application/openmetrics-text"
        ),
        (
            status = 401,
            description = "With `TRELLIS_METRICS=token` (the default): no `TRELLIS_METRICS_TOKEN`, API key or sign-in \
                           token sent",
            body = Problem
        ),
        (status = 404, description = "`TRELLIS_METRICS=off`", body = Problem),
    )
)]
async fn metrics(State(state): State<AppState>, request: Request) -> ApiResult<impl IntoResponse> {
    allowed(&state, request).await?;
    let gauges = state.store.engine_gauges().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    let bus = &state.engine.bus;
    let page = bus.metrics.render(&gauges, bus.hub.clients());
    Ok(([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], page))
}

/// Whether `TRELLIS_METRICS` lets this caller read the metrics.
async fn allowed(state: &AppState, request: Request) -> ApiResult<()> {
    match state.serve.metrics {
        MetricsAccess::Public => Ok(()),
        MetricsAccess::Off => Err(ApiError::NotFound("metrics are turned off here (TRELLIS_METRICS=off)".into())),
        MetricsAccess::Token => {
            let (mut parts, _) = request.into_parts();
            let sent = bearer(&parts.headers)?;
            if let (Some(sent), Some(expected)) = (sent.as_deref(), state.serve.metrics_token.as_deref()) {
                // Compared as digests, so the comparison's time says nothing about the token.
                if sha256(sent.as_bytes()) == sha256(expected.as_bytes()) {
                    return Ok(());
                }
            }
            Authed::<AsViewer>::from_request_parts(&mut parts, state).await.map(drop).map_err(|e| match e {
                ApiError::Unauthorized(_) => ApiError::Unauthorized(
                    "metrics need `Authorization: Bearer` with TRELLIS_METRICS_TOKEN, an API key, or a sign-in token"
                        .into(),
                ),
                other => other,
            })
        }
    }
}
