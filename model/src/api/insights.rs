//! Reads for the dashboard and failure triage, over the stored instances (so they survive
//! restarts and agree across processes).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `GET /api/v1/failures`: the failed and timed-out instances that ended in `[since, until)`,
/// grouped by workflow, failing node and error class, the largest groups first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FailureReport {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// Failures in the range, in all groups (including any beyond `limit`).
    pub total: i64,
    pub groups: Vec<FailureGroup>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FailureGroup {
    pub workflow_id: String,
    pub workflow_name: Option<String>,
    /// The node whose failure ended each instance of the group; `null` when the instance timed
    /// out as a whole. A failed node is always the root failure: Trellis ends an instance at
    /// its first failed node, so nodes downstream of it are skipped or canceled, never failed.
    pub node: Option<String>,
    /// The error with numbers, ids and quoted values folded (`trellis_model::failure`): the
    /// same class for "timeout after 3012 ms" and "timeout after 2990 ms".
    pub error_class: String,
    /// The error of the newest instance, as it was.
    pub sample_error: Option<String>,
    /// The newest instance of the group.
    pub sample_instance: String,
    pub count: i64,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
}

/// `GET /api/v1/stats/instances`: the instances that finished in `[since, until)`, counted per
/// slot of `bucket` and status, and each workflow's run durations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceStats {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// `minute`, `hour` or `day`.
    pub bucket: String,
    /// Every slot of the range in order, empty ones included.
    pub slots: Vec<StatsSlot>,
    /// Workflows with succeeded instances in the range, the busiest first.
    pub durations: Vec<WorkflowDurations>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatsSlot {
    pub start: DateTime<Utc>,
    /// Instances that finished in the slot, per terminal status.
    pub counts: super::StatusCounts,
}

/// The run durations (start to end) of a workflow's succeeded instances, nearest rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowDurations {
    pub workflow_id: String,
    pub workflow_name: Option<String>,
    pub count: i64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}
