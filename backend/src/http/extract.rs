//! axum's extractors with their rejections turned into problem+json.

use super::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts};

/// A JSON body: 400 malformed, 415 wrong content type, 413 too large, 422 wrong shape
/// (including unknown fields).
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// A JSON body that may be left out: an empty (or all-whitespace) body is `T::default()`.
/// Otherwise it must parse as `T`; `what` names it in the 422.
pub fn optional_json<T: serde::de::DeserializeOwned + Default>(body: &[u8], what: &str) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("invalid {what}: {e}"), vec![]))
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

/// Query and header text goes into SQL parameters, where Postgres refuses NUL.
pub fn no_nul(text: String) -> Result<String, ApiError> {
    if text.contains('\0') {
        Err(ApiError::BadRequest("query parameters must not contain NUL".into()))
    } else {
        Ok(text)
    }
}
