//! Rows as the store hands them out, and the inputs it takes.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use trellis_model::{Definition, Role, UserSource};
use uuid::Uuid;

/// The result of a conditional write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome<T> {
    Done(T),
    /// The row changed since it was read (its revision no longer matches).
    Stale,
    /// The workflow is archived; unarchive it to change it.
    Archived,
    NotFound,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRecord {
    pub id: Uuid,
    pub username: String,
    pub password_hash: String,
    /// A role this build does not know is a decode error naming it, never a lesser role.
    pub role: Role,
    pub created_at: DateTime<Utc>,
    /// When an admin disabled the user; `None` while enabled.
    pub disabled_at: Option<DateTime<Utc>>,
    pub source: UserSource,
    /// The provider's `sub` of an `oidc` user.
    pub subject: Option<String>,
    pub groups: Json<Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct NewUser {
    pub id: Uuid,
    pub username: String,
    pub password_hash: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
}

impl NewUser {
    pub fn new(username: &str, password_hash: String, role: Role) -> Self {
        NewUser { id: Uuid::now_v7(), username: username.to_owned(), password_hash, role, created_at: Utc::now() }
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApiKeyRecord {
    pub id: Uuid,
    pub name: String,
    /// The key's first characters, to recognise it in lists; not enough to use it.
    pub prefix: String,
    /// SHA-256 of the whole key, hex.
    pub key_hash: String,
    pub role: Role,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WorkflowRecord {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub draft: Json<Definition>,
    pub draft_rev: i64,
    pub latest_version: Option<i64>,
    pub archived: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct NewWorkflow {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub draft: Definition,
    pub now: DateTime<Utc>,
}

/// A partial update: `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct WorkflowChange {
    pub name: Option<String>,
    pub description: Option<String>,
    pub archived: Option<bool>,
}

#[derive(Debug, Clone)]
pub struct WorkflowQuery {
    /// Only workflows whose id sorts before this one (the page cursor).
    pub before: Option<Uuid>,
    pub limit: i64,
    /// Case-insensitive substring of the name.
    pub name_contains: Option<String>,
    pub include_archived: bool,
}

#[derive(Debug, Clone)]
pub struct NewVersion {
    pub note: Option<String>,
    pub published_by: String,
    pub now: DateTime<Utc>,
    /// The draft's nodes with a `stuck_after_ms` (node id, ms): their slow thresholds, written
    /// with the version.
    pub stuck_after: Vec<(String, i64)>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRecord {
    pub workflow_id: Uuid,
    pub version: i64,
    pub definition: Json<Definition>,
    pub note: Option<String>,
    pub published_by: Option<String>,
    pub published_at: DateTime<Utc>,
}

/// A version without its definition, for lists.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionInfo {
    pub version: i64,
    pub note: Option<String>,
    pub published_by: Option<String>,
    pub published_at: DateTime<Utc>,
}
