//! axum's extractors with their rejections turned into problem+json, and the strict
//! JSON body every route takes (see `strict`).

use super::error::ApiError;
use super::strict::{self, BodyError};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{header, HeaderMap};
use serde::de::DeserializeOwned;
use trellis_model::Issue;

/// A JSON body: 415 wrong content type, 413 too large, 400 malformed, 422 wrong shape
/// (not an object, an array for an object, unknown fields, a NUL anywhere).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(request.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with `Content-Type: application/json`".to_owned(),
            ));
        }
        let RawBody(body) = RawBody::from_request(request, state).await?;
        parse(&body, "request body").map(ApiJson)
    }
}

/// `application/json`, or any `application/...+json`, parameters aside.
pub fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The raw body, for routes whose body may be left out; 413 as problem+json.
#[derive(Debug)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        Ok(RawBody(Bytes::from_request(request, state).await?))
    }
}

#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// A query whose keys may repeat, read into a `Vec` (`?status=a&status=b`).
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum_extra::extract::Query), rejection(ApiError))]
pub struct ApiRepeatedQuery<T>(pub T);

/// A JSON body that may be left out: an empty (or all-whitespace) body is `T::default()`.
/// Otherwise it must be a JSON object that parses strictly as `T`; `what` names it.
pub fn optional_json<T: DeserializeOwned + Default>(body: &[u8], what: &str) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    parse(body, what)
}

fn parse<T: DeserializeOwned>(body: &[u8], what: &str) -> Result<T, ApiError> {
    strict::from_slice(body, what).map_err(refused)
}

/// A body `strict` refused, as a problem: 400 when it is not JSON, 422 when it has the wrong
/// shape, with an `errors` item naming the field when one is at fault.
pub fn refused(e: BodyError) -> ApiError {
    match e {
        BodyError::Syntax(detail) => ApiError::BadRequest(detail),
        BodyError::Shape { detail, path: Some(path), code } => {
            let issue = Issue::new(code, detail.clone()).path(path);
            ApiError::invalid(detail, vec![issue])
        }
        BodyError::Shape { detail, path: None, .. } => ApiError::invalid(detail, vec![]),
    }
}

/// Checks a `limit` query parameter: `default` when absent, else within 1..=`max`.
pub fn page_limit(limit: Option<i64>, default: i64, max: i64) -> Result<i64, ApiError> {
    let limit = limit.unwrap_or(default);
    if (1..=max).contains(&limit) {
        Ok(limit)
    } else {
        Err(ApiError::BadRequest(format!("`limit` must be between 1 and {max}")))
    }
}

/// Cuts a page fetched with `limit + 1` rows down to `limit`, returning the cursor of the
/// next page (the last kept row's id) when there is one.
pub fn next_cursor<T>(rows: &mut Vec<T>, limit: i64, id_of: impl Fn(&T) -> String) -> Option<String> {
    if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(id_of)
    } else {
        None
    }
}
