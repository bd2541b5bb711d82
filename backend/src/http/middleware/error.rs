//! One error type for every handler, rendered as RFC 9457 problem+json.
//!
//! Anything a client can fix is a 4xx saying what to fix. Internal failures are logged with
//! their cause and answered with a generic 500 (or 503 when the database is unreachable):
//! database text is never echoed to clients.

use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use trellis_model::api::Problem;
use trellis_model::Issue;

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PreconditionFailed(String),
    #[error("{0}")]
    PreconditionRequired(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{detail}")]
    Unprocessable { detail: String, errors: Vec<Issue> },
    #[error("{detail}")]
    Rejected { status: StatusCode, detail: String },
    /// A 429 that says when to try again (`Retry-After`, in seconds).
    #[error("{detail}")]
    TooManyRequests { detail: String, retry_after: u64 },
    #[error("service unavailable: {0}")]
    Unavailable(String),
    #[error("internal error: {0:#}")]
    Internal(#[from] anyhow::Error),
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn invalid(detail: impl Into<String>, errors: Vec<Issue>) -> Self {
        ApiError::Unprocessable { detail: detail.into(), errors }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::PreconditionRequired(_) => StatusCode::PRECONDITION_REQUIRED,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Rejected { status, .. } => *status,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn to_problem(&self) -> Problem {
        let status = self.status();
        let detail = match self {
            ApiError::Internal(_) => "an unexpected error occurred; it has been logged".to_owned(),
            ApiError::Unavailable(_) => {
                "the database cannot take this request right now (away or busy); try again shortly".to_owned()
            }
            other => other.to_string(),
        };
        let errors = match self {
            ApiError::Unprocessable { errors, .. } => errors.clone(),
            _ => Vec::new(),
        };
        problem(status, detail, errors)
    }
}

/// A problem document with a `type` naming the status (`.../problems/not-found`).
pub fn problem(status: StatusCode, detail: String, errors: Vec<Issue>) -> Problem {
    let title = status.canonical_reason().unwrap_or("Error");
    let slug = title.to_lowercase().replace([' ', '\''], "-");
    Problem {
        kind: format!("https://trellis.dev/problems/{slug}"),
        title: title.to_owned(),
        status: status.as_u16(),
        detail: Some(detail),
        errors,
    }
}

pub fn problem_response(problem: &Problem) -> Response {
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_vec(problem).expect("problems serialize");
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    response
}

/// Seconds a client is told to wait before trying again while the database is away.
const RETRY_AFTER_SECS: &str = "1";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let this = match self {
            // The engine wraps store errors in `anyhow`: a database that is away (or a deadlock
            // that outlived its retries) is still a 503 when it comes back through it.
            ApiError::Internal(e) if crate::store::transient::trouble_of(&e).is_some() => {
                ApiError::Unavailable(format!("{e:#}"))
            }
            other => other,
        };
        this.render()
    }
}

impl ApiError {
    fn render(self) -> Response {
        match &self {
            ApiError::Internal(e) => tracing::error!(error = format!("{e:#}"), "request failed"),
            ApiError::Unavailable(e) => tracing::warn!(error = %e, "unavailable (database or sandbox)"),
            _ => {}
        }
        let mut response = problem_response(&self.to_problem());
        if matches!(self, ApiError::Unauthorized(_)) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        // Every 503 says when to come back (the database away, every hashing slot busy, ...).
        if self.status() == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        if let ApiError::TooManyRequests { retry_after, .. } = &self {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(what) => ApiError::Conflict(format!("already exists ({what})")),
            // A deadlock that outlived the store's retries, or a database that is away.
            e if e.trouble().is_some() => ApiError::Unavailable(e.to_string()),
            StoreError::Database(db) => ApiError::Internal(db.into()),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let detail = match &rejection {
            JsonRejection::MissingJsonContentType(_) => {
                "send the body as JSON with `Content-Type: application/json`".to_owned()
            }
            JsonRejection::BytesRejection(_) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                "the request body is larger than this server accepts".to_owned()
            }
            _ => rejection.body_text(),
        };
        ApiError::Rejected { status: rejection.status(), detail }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError::PayloadTooLarge("the request body is larger than this server accepts".to_owned());
        }
        ApiError::Rejected { status: rejection.status(), detail: rejection.body_text() }
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::BadRequest(rejection.body_text())
    }
}

impl From<axum_extra::extract::QueryRejection> for ApiError {
    fn from(rejection: axum_extra::extract::QueryRejection) -> Self {
        ApiError::BadRequest(rejection.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::BadRequest(rejection.body_text())
    }
}

impl ApiError {
    /// No sandbox worker was free within the request's bound: a 503 (with `Retry-After`)
    /// saying so, in the sandbox's own words (never a database's).
    pub fn sandbox_busy(detail: String) -> Self {
        ApiError::Rejected { status: StatusCode::SERVICE_UNAVAILABLE, detail }
    }
}

/// The sandbox could not run a check for a reason of its own (a worker lost, none started,
/// every worker busy): passing trouble, answered 503 with `Retry-After`.
impl From<crate::sandbox::Stopped> for ApiError {
    fn from(stopped: crate::sandbox::Stopped) -> Self {
        match stopped.cause {
            crate::sandbox::Cause::Busy => ApiError::sandbox_busy(stopped.message),
            _ => ApiError::Unavailable(stopped.message),
        }
    }
}
