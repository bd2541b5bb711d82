//! What every request passes first and every error answer passes last, whatever route (or
//! none) handles it.
//!
//! [`guard_uri`] refuses a NUL (`%00`) anywhere in the path or query (Postgres refuses NUL in
//! text, so it must not reach a handler that stores or looks up what it names), paths too
//! long for any route or file (the web-app host would otherwise hand the file system a name
//! over its 255-byte limit and answer 500), and a declared body length over the limit (413
//! at once, instead of waiting for a body that would be refused anyway).
//!
//! [`problem_errors`] turns a plain-text or bodiless error answer — axum's extractor
//! rejections (`text/plain`), the file server's bare 4xx/5xx — into problem+json, keeping its status
//! and, when it had one, its text as the `detail`.

use super::error::{problem, problem_response};
use crate::http::AppState;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The longest path segment accepted: the common file-name limit (NAME_MAX), far beyond any
/// id or file name this server has.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// The longest path accepted.
pub const MAX_PATH_BYTES: usize = 2048;
/// Error texts longer than this are not copied into the problem's `detail`.
const MAX_DETAIL_BYTES: usize = 4096;

pub async fn guard_uri(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let checked = check_uri(request.uri().path(), request.uri().query()).and_then(|()| check_length(&state, &request));
    match checked {
        Ok(()) => next.run(request).await,
        Err((status, detail)) => problem_response(&problem(status, detail, vec![])),
    }
}

/// Webhook deliveries have their own limit, checked (and logged) by their handler.
fn check_length(state: &AppState, request: &Request) -> Result<(), (StatusCode, String)> {
    let limit = state.serve.max_body_bytes;
    let declared =
        request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 && !request.uri().path().starts_with("/hooks/") => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than this server accepts ({limit} bytes)"),
        )),
        _ => Ok(()),
    }
}

fn check_uri(path: &str, query: Option<&str>) -> Result<(), (StatusCode, String)> {
    // `%` only ever starts an escape in a URI (a raw NUL byte is not allowed at all), so any
    // `%00` is an encoded NUL.
    if path.contains("%00") {
        return Err((StatusCode::BAD_REQUEST, "the path contains %00 (a NUL character); remove it".to_owned()));
    }
    if query.is_some_and(|q| q.contains("%00")) {
        return Err((StatusCode::BAD_REQUEST, "query parameters must not contain NUL (%00)".to_owned()));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err((StatusCode::URI_TOO_LONG, format!("the path is over {MAX_PATH_BYTES} bytes")));
    }
    if path.split('/').any(|segment| segment.len() > MAX_SEGMENT_BYTES) {
        return Err((StatusCode::URI_TOO_LONG, format!("a path segment is over {MAX_SEGMENT_BYTES} bytes")));
    }
    Ok(())
}

pub async fn problem_errors(request: Request, next: Next) -> Response {
    let uri = request.uri().clone();
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    // Only bare and plain-text errors are rewritten: problems pass, and so do JSON answers
    // and the HTML page saying the web app is not built (it is for a browser).
    let plain = content_type.starts_with("text/plain");
    if !(plain || content_type.is_empty()) {
        return response;
    }
    if status.is_server_error() {
        // Handlers log their own failures as problems; a bare 5xx came from elsewhere (the
        // file server) and would otherwise go unexplained.
        tracing::error!(status = status.as_u16(), path = %uri.path(), "an error answer without a problem body");
    }
    let (parts, body) = response.into_parts();
    let text = match plain {
        true => axum::body::to_bytes(body, MAX_DETAIL_BYTES)
            .await
            .ok()
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned()),
        false => None,
    };
    let detail = match text.filter(|t| !t.is_empty()) {
        Some(_) if status == StatusCode::PAYLOAD_TOO_LARGE => {
            "the request body is larger than this server accepts".to_owned()
        }
        Some(text) => text,
        None => default_detail(status),
    };
    let mut answer = problem_response(&problem(status, detail, vec![]));
    // Keep what the original said beyond its body (`Allow`, `Retry-After`, ...).
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().entry(name).or_insert(value.clone());
        }
    }
    answer
}

fn default_detail(status: StatusCode) -> String {
    match status {
        StatusCode::METHOD_NOT_ALLOWED => "this path does not support that method".to_owned(),
        StatusCode::NOT_FOUND => "nothing here".to_owned(),
        StatusCode::PAYLOAD_TOO_LARGE => "the request body is larger than this server accepts".to_owned(),
        s if s.is_server_error() => "an unexpected error occurred; it has been logged".to_owned(),
        s => s.canonical_reason().unwrap_or("the request was refused").to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_and_overlong_paths_are_refused_and_ordinary_ones_pass() {
        assert!(check_uri("/api/v1/workflows/0191e0c0-0000-7000-8000-000000000000", Some("limit=5")).is_ok());
        assert!(check_uri("/pkg/%2500literal", None).is_ok(), "`%25` is a percent sign, not a NUL");
        assert_eq!(check_uri("/api/v1/workflows/a%00b", None).unwrap_err().0, StatusCode::BAD_REQUEST);
        assert_eq!(check_uri("/api/v1/workflows", Some("q=a%00")).unwrap_err().0, StatusCode::BAD_REQUEST);
        let segment = "x".repeat(MAX_SEGMENT_BYTES + 1);
        assert_eq!(check_uri(&format!("/{segment}"), None).unwrap_err().0, StatusCode::URI_TOO_LONG);
        assert!(check_uri(&format!("/{}", "x".repeat(MAX_SEGMENT_BYTES)), None).is_ok());
        let long = "/abc".repeat(MAX_PATH_BYTES / 4 + 1);
        assert_eq!(check_uri(&long, None).unwrap_err().0, StatusCode::URI_TOO_LONG);
    }
}
