//! Shared limits (`/limits`): a concurrency and/or a rate that node attempts naming the limit
//! (`"limit": "NAME"`) are held to across every workflow and process.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `rate`: at most `limit` attempts begin in any span of `period_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LimitRate {
    pub limit: u32,
    pub period_ms: u64,
}

/// `POST /limits` (and `PUT /limits/{name}`, where `name` may be left out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SharedLimitSpec {
    #[serde(default)]
    pub name: String,
    /// Attempts running at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<LimitRate>,
}

/// A shared limit with what it holds now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedLimit {
    pub name: String,
    pub concurrency: Option<u32>,
    pub rate: Option<LimitRate>,
    /// Attempts running under it now (holding a place of `concurrency`).
    pub in_use: u64,
    /// Attempts waiting for it now.
    pub waiting: u64,
    /// Attempts begun in the rate's current window.
    pub rate_used: u64,
    /// Held back until then: a call under it was answered 429 or 503 with `Retry-After`.
    pub paused_until: Option<DateTime<Utc>>,
    /// Workflows whose latest version names it.
    pub used_by: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `GET /limits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedLimitList {
    pub items: Vec<SharedLimit>,
}
