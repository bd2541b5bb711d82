//! Cross-site request forgery defence for `/api/v1`, a middleware on every mutating
//! request (POST, PUT, PATCH, DELETE):
//!
//! - A body must be JSON (`Content-Type: application/json` or `…+json`; 415 otherwise),
//!   whoever sends it. A page on another site can send a "simple" cross-origin request
//!   (`text/plain`, form encodings) without asking first; JSON needs a CORS preflight,
//!   which this server never grants.
//! - A foreign `Origin` is refused (403), sign-in included (login CSRF), unless the request
//!   authenticates with `Authorization: Bearer` (a browser cannot attach that cross-site).
//! - A request carrying the session cookie (and no `Authorization`) must prove it comes
//!   from this site: by its `Origin`, or without one by `Sec-Fetch-Site: same-origin`.
//!
//! SameSite=Strict alone is not enough: it treats other ports and sibling subdomains as
//! the same site. Webhooks (`/hooks/{id}`) are outside `/api/v1` and unaffected.

use super::authed::SESSION_COOKIE;
use super::error::{problem, problem_response};
use super::extract::is_json;
use crate::http::AppState;
use axum::body::HttpBody;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum_extra::extract::cookie::CookieJar;

pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !matches!(*request.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE) {
        return next.run(request).await;
    }
    let has_body = request.body().size_hint().exact() != Some(0);
    match check(request.headers(), has_body, &state) {
        Ok(()) => next.run(request).await,
        Err((status, detail)) => problem_response(&problem(status, detail, vec![])),
    }
}

/// Why a request is refused: its status and a detail saying what to do instead.
type Refusal = (StatusCode, String);

fn check(headers: &HeaderMap, has_body: bool, state: &AppState) -> Result<(), Refusal> {
    if has_body && !is_json(headers) {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the body as JSON with `Content-Type: application/json`".into(),
        ));
    }
    // Only `Bearer`: a browser attaches cached `Basic` credentials cross-site by itself.
    if matches!(super::authed::bearer(headers), Ok(Some(_))) {
        return Ok(());
    }
    match headers.get(header::ORIGIN).map(|o| o.to_str().unwrap_or("null")) {
        Some(origin) if same_origin(origin, headers, state) => Ok(()),
        Some(origin) => Err((
            StatusCode::FORBIDDEN,
            format!(
                "cross-origin request refused: `{origin}` is not this server's origin; use this server's own pages, \
                 or send `Authorization: Bearer <token>`"
            ),
        )),
        None if CookieJar::from_headers(headers).get(SESSION_COOKIE).is_none() => Ok(()),
        None if fetch_site(headers) == Some("same-origin") => Ok(()),
        None => Err((
            StatusCode::FORBIDDEN,
            "a change signed in by the session cookie must come from this server's pages (send `Origin`), or \
             authenticate with `Authorization: Bearer <token>` instead"
                .into(),
        )),
    }
}

fn fetch_site(headers: &HeaderMap) -> Option<&str> {
    headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
}

/// Whether `origin` is this server: the request's own host (or, behind a proxy, the host
/// it forwarded), or `TRELLIS_PUBLIC_URL`'s origin.
fn same_origin(origin: &str, headers: &HeaderMap, state: &AppState) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false; // `null` (sandboxed frames, some redirects) and garbage
    };
    let origin_authority = without_default_port(scheme, authority);
    if let Some(public) = state.serve.public_url.as_deref() {
        if let Some((s, rest)) = public.trim_end_matches('/').split_once("://") {
            let public_authority = rest.split('/').next().unwrap_or_default();
            if s.eq_ignore_ascii_case(scheme) && without_default_port(s, public_authority) == origin_authority {
                return true;
            }
        }
    }
    let forwarded = state.serve.behind_proxy.then(|| headers.get("x-forwarded-host")).flatten();
    [forwarded, headers.get(header::HOST)]
        .into_iter()
        .flatten()
        .filter_map(|h| h.to_str().ok())
        .any(|host| without_default_port(scheme, host.split(',').next().unwrap_or_default().trim()) == origin_authority)
}

/// `host:port` in lower case, without the port `scheme` implies.
fn without_default_port(scheme: &str, authority: &str) -> String {
    let authority = authority.to_ascii_lowercase();
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => "",
    };
    match authority.strip_suffix(default) {
        Some(bare) if !default.is_empty() => bare.to_owned(),
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::without_default_port;

    #[test]
    fn default_ports_and_case_do_not_matter() {
        assert_eq!(without_default_port("https", "Example.com:443"), "example.com");
        assert_eq!(without_default_port("http", "example.com:80"), "example.com");
        assert_eq!(without_default_port("http", "example.com:8080"), "example.com:8080");
        assert_eq!(without_default_port("https", "example.com:80"), "example.com:80");
    }
}
