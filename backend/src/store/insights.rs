//! Reads over the stored instances for the dashboard and failure triage, the trait and
//! rows here, the SQL in `queries/insights.rs` (one body for both backends). They group in
//! the database: at 100,000 failed instances only the groups cross the wire.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use trellis_model::InstanceStatus;
use uuid::Uuid;

/// Which failures to group: those that ended in `[since, until)`, of one workflow or all.
#[derive(Debug, Clone)]
pub struct FailureQuery {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub workflow: Option<Uuid>,
    pub limit: i64,
}

/// Failed or timed-out instances of one workflow, failing node and error class.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct FailureGroupRow {
    pub workflow_id: Uuid,
    pub failed_node: Option<String>,
    /// The stored class; `None` for instances that failed before classes were stored.
    pub error_class: Option<String>,
    pub count: i64,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// The newest instance of the group (ids are time-ordered).
    pub sample_instance: Uuid,
    pub sample_error: Option<String>,
}

/// Which finished instances to count: those that ended in `[since, until)`, of one workflow
/// or all, in slots of `slot_seconds` from `since`.
#[derive(Debug, Clone)]
pub struct StatsQuery {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub slot_seconds: i64,
    pub workflow: Option<Uuid>,
}

/// Two ranks of the run durations of one workflow's succeeded instances, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationRanks {
    pub workflow_id: Uuid,
    pub count: i64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

#[async_trait]
pub trait InsightStore: Send + Sync + 'static {
    /// The largest groups first, at most `limit`; and how many failures there are in all.
    async fn failure_groups(&self, query: &FailureQuery) -> Result<(Vec<FailureGroupRow>, i64)>;
    /// Instances that finished, per slot (0 is the one starting at `since`) and status.
    async fn finished_per_slot(&self, query: &StatsQuery) -> Result<Vec<(i64, InstanceStatus, i64)>>;
    /// The median and 95th percentile (nearest rank) of each workflow's run durations.
    async fn duration_ranks(&self, query: &StatsQuery) -> Result<Vec<DurationRanks>>;
}

/// The nearest rank (1-based) of the `p`th percentile among `n` values, in integer arithmetic
/// as the SQL computes it: `ceil(p * n / 100)`.
pub fn nearest_rank(p: i64, n: i64) -> i64 {
    (p * n + 99) / 100
}

// The statements `queries/insights.rs` runs, named for what they do.
pub(super) const ERRORS_OF: &str = "SELECT id, error FROM instances WHERE id IN (";
