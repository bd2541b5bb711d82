//! Serves the single-page app: the one built into the binary, or the folder
//! `TRELLIS_WEB_DIR` names. Any path that is not a file gets `index.html`, so client-side
//! routes (`/workflows/...`) survive a reload; unknown `/api/` paths stay problem+json 404s
//! instead of turning into HTML.
//!
//! Files named by their content are cached for a year (`immutable`); `index.html`, which
//! names them, is revalidated on every load (`no-cache`, cheap with its `ETag`). Each file goes
//! out in the precompressed form `Accept-Encoding` allows (brotli, then gzip).

mod assets;
mod negotiate;

use crate::http::middleware::error::{problem, problem_response};
use crate::http::AppState;
use assets::{Asset, Source, INDEX};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use std::path::Path;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

pub async fn serve(State(state): State<AppState>, request: Request<Body>) -> Response {
    let path = request.uri().path();
    if path.starts_with("/api/") || path == "/api" {
        return crate::http::not_found();
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let refused = problem(StatusCode::METHOD_NOT_ALLOWED, "the web app's files are only read (GET)".into(), vec![]);
        let mut response = problem_response(&refused);
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let name = path.trim_start_matches('/').to_owned();
    let found = match state.serve.web_dir.clone() {
        None => find(Source::Embedded, &name),
        // A folder is read from disk: off the threads that serve requests.
        Some(dir) => match tokio::task::spawn_blocking(move || find(Source::Dir(&dir), &name)).await {
            Ok(found) => found,
            Err(_) => Found::NotBuilt,
        },
    };
    match found {
        Found::Asset(asset) => respond(&asset, request.headers()),
        Found::NoSuchFile => {
            problem_response(&problem(StatusCode::NOT_FOUND, "no such file in the web app".into(), vec![]))
        }
        Found::NotBuilt => not_built(state.serve.web_dir.as_deref()),
    }
}

enum Found {
    Asset(Asset),
    /// `/pkg/old-name.js` after a deploy: the page would be a confusing answer to a script.
    NoSuchFile,
    NotBuilt,
}

/// The file a path names, or the page for a client-side route.
fn find(source: Source<'_>, name: &str) -> Found {
    if !source.is_built() {
        return Found::NotBuilt;
    }
    match source.get(if name.is_empty() { INDEX } else { name }) {
        Some(asset) => Found::Asset(asset),
        None if looks_like_a_file(name) => Found::NoSuchFile,
        None => source.get(INDEX).map_or(Found::NotBuilt, Found::Asset),
    }
}

/// Client-side routes are ids and words; a last segment with an extension asks for a file.
fn looks_like_a_file(name: &str) -> bool {
    name.rsplit('/').next().is_some_and(|last| last.contains('.'))
}

fn respond(asset: &Asset, request: &HeaderMap) -> Response {
    let text = |name| request.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let encoding = negotiate::choose(text(header::ACCEPT_ENCODING), asset);
    let etag = asset.etag(encoding);
    let mut response = if text(header::IF_NONE_MATCH).is_some_and(|tags| negotiate::still_current(tags, &etag)) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = Response::new(Body::from(asset.contents(encoding)));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
        if let Some(token) = encoding.token() {
            response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static(token));
        }
        response
    };
    let headers = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, etag);
    }
    let cache = if asset.immutable { IMMUTABLE } else { "no-cache" };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    response
}

fn not_built(web_dir: Option<&Path>) -> Response {
    let why = match web_dir {
        Some(dir) => format!(
            "There is no built web app in <code>{}</code> (<code>TRELLIS_WEB_DIR</code>): run \
             <code>cargo xtask spa</code>, or unset it to serve the app built into the binary.",
            html_escape(&dir.display().to_string())
        ),
        None => "This <code>trellis</code> binary was built without the web app. Build one with \
                 <code>cargo xtask dist</code> (or start one with <code>cargo xtask run</code>), or set \
                 <code>TRELLIS_WEB_DIR</code> to a built app (<code>cargo xtask spa</code> writes \
                 <code>dist/</code>)."
            .to_owned(),
    };
    let page = format!(
        "<!doctype html><title>Trellis</title><h1>Trellis is running</h1><p>{why}</p>\
         <p>The API is available under <code>/api/v1</code>.</p>"
    );
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, Html(page)).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// One line at start-up saying where the web app comes from, or how to get one.
pub fn announce(web_dir: Option<&Path>) {
    let source = Source::new(web_dir);
    match (web_dir, source.is_built()) {
        (Some(dir), true) => tracing::info!(dir = %dir.display(), "serving the web app from a folder"),
        (Some(dir), false) => tracing::warn!(
            dir = %dir.display(),
            "TRELLIS_WEB_DIR has no index.html: run `cargo xtask spa`, or unset it to serve the app built into the binary"
        ),
        (None, true) => tracing::info!(files = Source::embedded_count(), "serving the web app built into this binary"),
        (None, false) => tracing::warn!(
            "this binary was built without the web app: build one with `cargo xtask dist`, or set TRELLIS_WEB_DIR to a built app (`cargo xtask spa`)"
        ),
    }
}

pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
