//! Saved views as stored: a named instances-list path, private or shared
//! (`http/resources/views.rs` checks them). The trait here, the SQL in `queries/views.rs`.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ViewRow {
    pub id: Uuid,
    /// A user's or an API key's id (`Principal::id`).
    pub owner_id: String,
    pub owner_name: String,
    pub name: String,
    pub path: String,
    pub shared: bool,
    pub created_at: DateTime<Utc>,
}

#[async_trait]
pub trait ViewStore: Send + Sync + 'static {
    /// `false` if the owner already has a view of that name.
    async fn insert_view(&self, row: &ViewRow) -> Result<bool>;
    /// `owner`'s views and everyone's shared ones, by name.
    async fn list_views(&self, owner: &str) -> Result<Vec<ViewRow>>;
    async fn view(&self, id: Uuid) -> Result<Option<ViewRow>>;
    /// `false` if there is no such view.
    async fn delete_view(&self, id: Uuid) -> Result<bool>;
}

const COLUMNS: &str = "id, owner_id, owner_name, name, path, shared, created_at";
pub(super) const INSERT_VIEW: &str = const_format::concatcp!(
    "INSERT INTO saved_views (",
    COLUMNS,
    ") VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (owner_id, name) DO NOTHING"
);
/// `$2` is `true`: the same text serves both dialects' booleans.
pub(super) const LIST_VIEWS: &str = const_format::concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM saved_views WHERE owner_id = $1 OR shared = $2 ORDER BY name, id"
);
pub(super) const VIEW: &str = const_format::concatcp!("SELECT ", COLUMNS, " FROM saved_views WHERE id = $1");
pub(super) const DELETE_VIEW: &str = "DELETE FROM saved_views WHERE id = $1";
