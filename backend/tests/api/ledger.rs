//! A small HTTP server on loopback that `http` nodes call in tests: it records every request
//! (path, Idempotency-Key, Authorization, body; the last echoed back) and can be slow or failing on demand.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::any;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Call {
    pub path: String,
    pub idempotency_key: Option<String>,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Default)]
pub struct Ledger {
    pub calls: Mutex<Vec<Call>>,
    in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
}

pub async fn start() -> (SocketAddr, Arc<Ledger>) {
    let ledger = Arc::new(Ledger::default());
    let app = Router::new().route("/{*path}", any(record)).with_state(ledger.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, ledger)
}

/// `/slow/...` takes 300 ms; `/status/{code}/...` answers with that status.
async fn record(
    State(ledger): State<Arc<Ledger>>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, Json<Value>) {
    let now = ledger.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    ledger.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let call =
        Call { path: path.clone(), idempotency_key: key, authorization: authorization.clone(), body: body.clone() };
    ledger.calls.lock().unwrap().push(call);
    if path.starts_with("slow") {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    ledger.in_flight.fetch_sub(1, Ordering::SeqCst);
    let status =
        path.strip_prefix("status/").and_then(|s| s.split('/').next()).and_then(|c| c.parse().ok()).unwrap_or(200);
    let mut answer = json!({"path": path, "echo": body});
    if let Some(authorization) = authorization {
        // Echoed as servers that reflect their request do: what redaction must catch.
        answer["authorization"] = json!(authorization);
    }
    (StatusCode::from_u16(status).unwrap(), Json(answer))
}
