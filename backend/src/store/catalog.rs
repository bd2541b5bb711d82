//! The catalog: workflows, their drafts and their published versions; the rows and trait here,
//! the SQL in `queries/catalog.rs` (one body for both backends). Also `LIKE` escaping, which
//! the audit log's search shares.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use sqlx::types::Json;
use trellis_model::Definition;
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

/// Workflows, drafts and versions. A draft changes by compare-and-swap on its revision;
/// versions, once published, never change.
#[async_trait]
pub trait CatalogStore: Send + Sync + 'static {
    async fn create_workflow(&self, new: &NewWorkflow) -> Result<WorkflowRecord>;
    async fn list_workflows(&self, query: &WorkflowQuery) -> Result<Vec<WorkflowRecord>>;
    async fn get_workflow(&self, id: Uuid) -> Result<Option<WorkflowRecord>>;
    /// The names of those of `ids` that exist, for lists of instances.
    async fn workflow_names(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>>;
    async fn update_workflow(&self, id: Uuid, change: &WorkflowChange) -> Result<Option<WorkflowRecord>>;
    /// Replaces the draft if its revision is still `expected_rev` (`None`: any revision).
    async fn save_draft(&self, id: Uuid, expected_rev: Option<i64>, draft: &Definition) -> Result<WriteOutcome<i64>>;
    /// Freezes the draft as the next version if its revision is still `draft_rev`.
    async fn publish(&self, id: Uuid, draft_rev: i64, publish: &NewVersion) -> Result<WriteOutcome<i64>>;
    async fn list_versions(&self, workflow: Uuid) -> Result<Vec<VersionInfo>>;
    async fn get_version(&self, workflow: Uuid, version: i64) -> Result<Option<VersionRecord>>;
}

/// Escapes `%`, `_` and `\` so user text matches literally inside a `LIKE` pattern.
pub(super) fn like_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

pub(super) const WORKFLOW_COLUMNS: &str =
    "id, name, description, draft, draft_rev, latest_version, archived, created_at, updated_at";

// The statements `queries/catalog.rs` runs, named for what they do.
pub(super) const CREATE_WORKFLOW: &str = concatcp!(
    "INSERT INTO workflows (id, name, description, draft, draft_rev, archived, created_at, updated_at) \
    VALUES ($1, $2, $3, $4, 1, $5, $6, $6) RETURNING ",
    WORKFLOW_COLUMNS
);
pub(super) const LIST_WORKFLOWS: &str = concatcp!(
    "SELECT ",
    WORKFLOW_COLUMNS,
    " FROM workflows WHERE ($1 OR archived = $2) AND ($3 IS NULL OR id < $3) AND ($4 IS NULL OR \
    LOWER(name) LIKE $4 ESCAPE '\\') ORDER BY id DESC LIMIT $5"
);
pub(super) const GET_WORKFLOW: &str = concatcp!("SELECT ", WORKFLOW_COLUMNS, " FROM workflows WHERE id = $1");
pub(super) const WORKFLOW_NAMES_OF: &str = "SELECT id, name FROM workflows WHERE id IN (";
pub(super) const UPDATE_WORKFLOW: &str = concatcp!(
    "UPDATE workflows SET name = COALESCE($1, name), description = COALESCE($2, description), archived = \
    COALESCE($3, archived), updated_at = $4 WHERE id = $5 RETURNING ",
    WORKFLOW_COLUMNS
);
pub(super) const SAVE_DRAFT: &str =
    "UPDATE workflows SET draft = $1, draft_rev = draft_rev + 1, updated_at = $2 WHERE id = $3 AND \
    archived = $4 AND ($5 IS NULL OR draft_rev = $5) RETURNING draft_rev";
pub(super) const BUMP_LATEST_VERSION: &str =
    "UPDATE workflows SET latest_version = COALESCE(latest_version, 0) + 1, updated_at = $1 WHERE id = \
    $2 AND archived = $3 AND draft_rev = $4 RETURNING latest_version";
pub(super) const INSERT_VERSION_FROM_DRAFT: &str =
    "INSERT INTO workflow_versions (workflow_id, version, definition, note, published_by, published_at) \
    SELECT id, latest_version, draft, $1, $2, $3 FROM workflows WHERE id = $4";
pub(super) const LIST_VERSIONS: &str =
    "SELECT version, note, published_by, published_at FROM workflow_versions WHERE workflow_id = $1 \
    ORDER BY version DESC";
pub(super) const GET_VERSION: &str =
    "SELECT workflow_id, version, definition, note, published_by, published_at FROM workflow_versions \
    WHERE workflow_id = $1 AND version = $2";
pub(super) const WORKFLOW_ARCHIVED: &str = "SELECT archived FROM workflows WHERE id = $1";
