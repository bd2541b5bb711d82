//! Security headers on every answer (the single-page app's and the API's alike), set
//! unless a handler chose its own:
//!
//! - `Content-Security-Policy`: scripts only from this server (the wasm module needs
//!   `'wasm-unsafe-eval'` to compile; no inline script), requests only back to it, no
//!   framing, no plugins, no `<base>` tricks. Inline style *attributes* are allowed
//!   (`style-src-attr`): the run view's timeline positions its bars with them; `<style>`
//!   elements and foreign style sheets are not.
//! - `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY` (for browsers older than
//!   `frame-ancestors`), and `Referrer-Policy: no-referrer` (URLs hold instance ids).

use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
     connect-src 'self'; img-src 'self' data:; style-src 'self'; style-src-attr 'unsafe-inline'; \
     object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const HEADERS: [(HeaderName, &str); 4] = [
    (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::REFERRER_POLICY, "no-referrer"),
];

pub async fn secure(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in HEADERS {
        headers.entry(name).or_insert(HeaderValue::from_static(value));
    }
    response
}
