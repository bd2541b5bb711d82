//! Serves the built single-page app. Any path that is not a file gets `index.html`, so
//! client-side routes (`/workflows/...`) survive a reload; unknown `/api/` paths stay
//! problem+json 404s instead of turning into HTML.

use crate::http::AppState;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

pub async fn serve(State(state): State<AppState>, request: Request<Body>) -> Response {
    if request.uri().path().starts_with("/api/") {
        return crate::http::not_found();
    }
    let dir = &state.serve.web_dir;
    let index = dir.join("index.html");
    if !index.is_file() {
        return not_built(dir);
    }
    let service = ServeDir::new(dir).fallback(ServeFile::new(&index));
    let mut response = match service.oneshot(request).await {
        Ok(response) => response.into_response(),
        Err(infallible) => match infallible {},
    };
    let is_html = response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if is_html {
        // The page names the current bundle; it must never be cached past a deploy.
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    response
}

fn not_built(dir: &std::path::Path) -> Response {
    let page = format!(
        "<!doctype html><title>Trellis</title><h1>Trellis is running</h1>\
         <p>The web app is not built in <code>{}</code>. Run <code>cargo xtask run</code>, \
         or set <code>TRELLIS_WEB_DIR</code>. The API is available under <code>/api/v1</code>.</p>",
        html_escape(&dir.display().to_string())
    );
    (StatusCode::SERVICE_UNAVAILABLE, Html(page)).into_response()
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
