//! A request never waits on the sandbox longer than it should wait for an answer: every
//! sandbox request a handler makes (a start's concurrency key, a validation's compiles, a
//! script preview, a webhook's input mapping) waits in line for a worker at most
//! `TRELLIS_SANDBOX_REQUEST_WAIT_MS`, then is refused as busy — a 503 with `Retry-After` —
//! rather than holding the connection until a worker frees (`sandbox::lanes`).

use crate::http::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Duration;

pub async fn bound(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let bound = Duration::from_millis(state.serve.sandbox_request_wait_ms);
    crate::sandbox::waiting_at_most(bound, next.run(request)).await
}
