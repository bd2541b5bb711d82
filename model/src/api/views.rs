//! Saved views: a named instances-list filter (the SPA path with its query), private to its
//! owner or shared with everyone.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `POST /views`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateView {
    pub name: String,
    /// The instances list with its filters, as the SPA's address shows it: `/instances?...`.
    pub path: String,
    #[serde(default)]
    pub shared: bool,
}

/// Who saved a view: a user, or an API key (`key:<name>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ViewOwner {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SavedView {
    pub id: String,
    pub name: String,
    pub path: String,
    pub shared: bool,
    pub owner: ViewOwner,
    pub created_at: DateTime<Utc>,
}
