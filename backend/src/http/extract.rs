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
