//! Probes for orchestrators: liveness says the process answers, readiness that the
//! database does too.

use super::error::{ApiError, ApiResult};
use super::AppState;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz))
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    state.store.ping().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    Ok(Json(json!({"status": "ready", "database": state.store.backend()})))
}
