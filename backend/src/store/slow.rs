//! Slow runs (`crate::slow`): the thresholds running nodes are judged by, the trait and SQL
//! text here, the bodies in `queries/slow.rs`.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// `slow_thresholds.basis` of a node's own `stuck_after_ms`.
pub const BASIS_STUCK_AFTER: &str = "stuck_after_ms";
/// `slow_thresholds.basis` of k× the p95 of recent successful durations.
pub const BASIS_P95: &str = "p95";

/// The threshold one node of one version is judged by.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SlowThreshold {
    pub node_id: String,
    pub threshold_ms: i64,
    pub basis: String,
}

/// A node running now, of a workflow's version, with no threshold of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, sqlx::FromRow)]
pub struct RunningNode {
    pub workflow_id: Uuid,
    pub version: i64,
    pub node_id: String,
}

#[async_trait]
pub trait SlowStore: Send + Sync + 'static {
    /// The thresholds of `workflow`'s `version`, by node.
    async fn slow_thresholds(&self, workflow: Uuid, version: i64) -> Result<Vec<SlowThreshold>>;
    /// The (workflow, version, node)s running or waiting now that have no `stuck_after_ms`.
    async fn running_without_stuck_after(&self) -> Result<Vec<RunningNode>>;
    /// (started, ended) of `node`'s latest successful runs in `workflow`'s succeeded
    /// instances, newest first, at most `limit`.
    async fn recent_durations(
        &self,
        workflow: Uuid,
        node: &str,
        limit: i64,
    ) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>>;
    /// Sets (or, with `None`, removes) the p95-based threshold of a running node; a
    /// `stuck_after_ms` threshold is never touched.
    async fn put_p95_threshold(&self, node: &RunningNode, threshold_ms: Option<i64>, now: DateTime<Utc>) -> Result<()>;
}

pub(super) const SLOW_THRESHOLDS: &str =
    "SELECT node_id, threshold_ms, basis FROM slow_thresholds WHERE workflow_id = $1 AND version = $2";
/// Walks running instances (`instances_by_status`) and their node rows (primary key).
pub(super) const RUNNING_WITHOUT_STUCK_AFTER: &str = "SELECT DISTINCT i.workflow_id, i.version, n.node_id \
    FROM instances i JOIN instance_nodes n ON n.instance_id = i.id \
    LEFT JOIN slow_thresholds t ON t.workflow_id = i.workflow_id AND t.version = i.version AND t.node_id = n.node_id \
    WHERE i.status = 'running' AND n.status IN ('running', 'waiting') AND n.started_at IS NOT NULL \
    AND (t.basis IS NULL OR t.basis = 'p95')";
/// The newest succeeded instances of the workflow (`instances_by_workflow`, backwards), each
/// one primary-key lookup for the node: at most `limit` rows read, whatever the history.
pub(super) const RECENT_DURATIONS: &str = "SELECT n.started_at, n.ended_at FROM instances i \
    JOIN instance_nodes n ON n.instance_id = i.id AND n.node_id = $2 \
    WHERE i.workflow_id = $1 AND i.status = 'succeeded' AND n.status = 'succeeded' \
    AND n.started_at IS NOT NULL AND n.ended_at IS NOT NULL \
    ORDER BY i.id DESC LIMIT $3";
pub(super) const PUT_P95_THRESHOLD: &str = "INSERT INTO slow_thresholds \
    (workflow_id, version, node_id, threshold_ms, basis, refreshed_at) VALUES ($1, $2, $3, $4, 'p95', $5) \
    ON CONFLICT (workflow_id, version, node_id) DO UPDATE SET threshold_ms = excluded.threshold_ms, \
    refreshed_at = excluded.refreshed_at WHERE slow_thresholds.basis = 'p95'";
pub(super) const DELETE_P95_THRESHOLD: &str =
    "DELETE FROM slow_thresholds WHERE workflow_id = $1 AND version = $2 AND node_id = $3 AND basis = 'p95'";
pub(super) const PUT_STUCK_AFTER: &str = "INSERT INTO slow_thresholds \
    (workflow_id, version, node_id, threshold_ms, basis, refreshed_at) VALUES ($1, $2, $3, $4, 'stuck_after_ms', $5) \
    ON CONFLICT (workflow_id, version, node_id) DO UPDATE SET threshold_ms = excluded.threshold_ms, \
    basis = excluded.basis, refreshed_at = excluded.refreshed_at";
