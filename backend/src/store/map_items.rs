//! The items of `map` nodes as stored (`engine/map/` runs them): the trait and its SQL here,
//! the bodies in `queries/map_items.rs`.

use super::{Fence, NewEvent, Result};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use trellis_model::NodeStatus;
use uuid::Uuid;

/// One item of a map node.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct MapItemRow {
    pub idx: i32,
    /// What the item was (a digest of its JSON): a later attempt reuses a succeeded result
    /// only for the same item at the same index.
    pub item_digest: String,
    pub status: NodeStatus,
    pub attempts: i32,
    #[sqlx(try_from = "super::lenient::LenientOpt")]
    pub output: Option<Json<serde_json::Value>>,
    pub error: Option<String>,
    /// The child instance of a map over a workflow.
    pub child_id: Option<Uuid>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
}

/// A batch of item changes of one map node, written by the attempt that holds `fence`.
pub struct MapItemWrites<'a> {
    pub fence: &'a Fence,
    pub instance: Uuid,
    pub workflow: Uuid,
    pub node: &'a str,
    pub rows: &'a [MapItemRow],
    /// Rows from this index on are deleted (the list got shorter since an earlier attempt).
    pub drop_from: Option<i32>,
    /// History entries appended with the rows (item spans).
    pub events: &'a [NewEvent],
}

/// How many items of a node are in each status.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct MapItemCount {
    pub node_id: String,
    pub status: NodeStatus,
    pub count: i64,
}

#[async_trait]
pub trait MapStore: Send + Sync + 'static {
    /// Every item row of the node, by index.
    async fn map_items(&self, instance: Uuid, node: &str) -> Result<Vec<MapItemRow>>;
    /// Writes the batch if the fence still holds; `None` if it does not (the attempt lost its
    /// lease: nothing was written), else the `seq` of the first history entry appended.
    async fn write_map_items(&self, writes: &MapItemWrites<'_>) -> Result<Option<i64>>;
    /// A page of the node's items after index `after`, optionally of one status.
    async fn map_item_page(
        &self,
        instance: Uuid,
        node: &str,
        status: Option<NodeStatus>,
        after: i32,
        limit: i64,
    ) -> Result<Vec<MapItemRow>>;
    /// Item counts by node and status for an instance's map nodes.
    async fn map_item_counts(&self, instance: Uuid) -> Result<Vec<MapItemCount>>;
}

pub(super) const MAP_ITEM_COLUMNS: &str =
    "idx, item_digest, status, attempts, output, error, child_id, started_at, ended_at";
pub(super) const SELECT_MAP_ITEMS: &str = const_format::concatcp!(
    "SELECT ",
    MAP_ITEM_COLUMNS,
    " FROM map_items WHERE instance_id = $1 AND node_id = $2 ORDER BY idx"
);
pub(super) const MAP_ITEM_PAGE: &str = const_format::concatcp!(
    "SELECT ",
    MAP_ITEM_COLUMNS,
    " FROM map_items WHERE instance_id = $1 AND node_id = $2 AND idx > $3 AND ($4 IS NULL OR status = $4) \
     ORDER BY idx LIMIT $5"
);
pub(super) const MAP_ITEM_COUNTS: &str = "SELECT node_id, status, COUNT(*) AS count FROM map_items \
     WHERE instance_id = $1 GROUP BY node_id, status ORDER BY node_id, status";
pub(super) const CLEAR_MAP_ITEMS: &str = "DELETE FROM map_items WHERE instance_id = $1";
pub(super) const DROP_MAP_ITEMS_FROM: &str =
    "DELETE FROM map_items WHERE instance_id = $1 AND node_id = $2 AND idx >= $3";
/// Whether the fence still holds (the work item is there, leased to its owner in its epoch).
pub(super) const FENCE_HOLDS: &str = "SELECT 1 FROM work WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3";
pub(super) const INSERT_MAP_ITEMS: &str =
    const_format::concatcp!("INSERT INTO map_items (instance_id, node_id, ", MAP_ITEM_COLUMNS, ") ");
/// Attempt counts never go down (a canceled item's row does not know them): numbers stay unique.
pub(super) const UPSERT_MAP_ITEMS_TAIL: &str =
    " ON CONFLICT (instance_id, node_id, idx) DO UPDATE SET item_digest = excluded.item_digest, status = \
     excluded.status, attempts = CASE WHEN excluded.attempts > map_items.attempts THEN excluded.attempts \
     ELSE map_items.attempts END, output = excluded.output, error = excluded.error, \
     child_id = excluded.child_id, started_at = excluded.started_at, ended_at = excluded.ended_at";
/// Rows per multi-row insert: 11 binds each stays under SQLite's limit.
pub(super) const MAP_ROWS_PER_INSERT: usize = 1_000;
