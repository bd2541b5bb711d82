//! Probes for orchestrators: liveness says the process answers, readiness that the
//! database does too; and `/metrics` for Prometheus.

use super::error::{ApiError, ApiResult};
use super::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz)).route("/metrics", get(metrics))
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    state.store.ping().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    Ok(Json(json!({"status": "ready", "database": state.store.backend()})))
}

/// OpenMetrics text, which Prometheus scrapes natively.
async fn metrics(State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    let gauges = state.store.engine_gauges().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    let bus = &state.engine.bus;
    let page = bus.metrics.render(&gauges, bus.hub.clients());
    Ok(([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], page))
}
