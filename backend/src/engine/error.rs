//! What the engine's commands can refuse with; `http::middleware::error` maps each to a status.

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// The caller may not do this (not an approval's assignee).
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    LimitReached(String),
    /// The workflow's `rate_limit` refused the start until `retry_at`; nothing was created.
    #[error("{detail}")]
    RateLimited { detail: String, retry_at: chrono::DateTime<chrono::Utc> },
    #[error("{0}")]
    TooLarge(String),
    /// Input a client can fix.
    #[error("{0}")]
    Invalid(String),
    /// A start's input violates the workflow's `input_schema`: each violation, by JSON path.
    #[error("{detail}")]
    InputRejected { detail: String, errors: Vec<trellis_model::Issue> },
    /// Passing trouble outside the database (a sandbox worker lost mid-evaluation): try again.
    #[error("{0}")]
    Unavailable(String),
    /// No sandbox worker was free within the caller's bound (an HTTP request's): nothing was
    /// done; try again shortly. The text is the sandbox's own, safe to show.
    #[error("{0}")]
    Busy(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}
