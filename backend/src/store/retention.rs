//! Purging finished instances (`DELETE /instances/{id}`) and retention (policies, and the
//! sweeper's deletes by age), the trait and policies here, the SQL in
//! `queries/retention.rs` (one body for both backends).
//!
//! Every delete re-checks that the instance has finished in the deleting statement itself:
//! a retry in another process may bring a failed instance back to life between our read
//! and our write, and Postgres re-evaluates the `WHERE` of a `DELETE` on the row it locks.

use super::statuses::TERMINAL;
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use serde::{Deserialize, Serialize};
use trellis_model::InstanceStatus;
use uuid::Uuid;

#[async_trait]
pub trait RetentionStore: Send + Sync + 'static {
    /// Deletes a finished instance with its nodes, work, history and idempotency records.
    async fn purge_instance(&self, id: Uuid) -> Result<PurgeOutcome>;
    /// The policy of `workflow`, or the default one (`None`).
    async fn retention(&self, workflow: Option<Uuid>) -> Result<Option<RetentionPolicy>>;
    async fn put_retention(&self, workflow: Option<Uuid>, policy: &RetentionPolicy) -> Result<()>;
    /// Workflows with a policy of their own.
    async fn workflow_retentions(&self) -> Result<Vec<(Uuid, RetentionPolicy)>>;
    /// Deletes up to `limit` instances with `status` that ended before `before`, of
    /// `workflow` or (for `None`) of every workflow without a policy of its own; returns
    /// how many.
    /// What `sweep_expired` would delete of `status` ended before `before` in the scope, per
    /// workflow: (workflow, instances, history entries). Nothing is deleted.
    async fn expired_counts(
        &self,
        workflow: Option<Uuid>,
        status: &str,
        before: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, i64, i64)>>;
    async fn sweep_expired(
        &self,
        workflow: Option<Uuid>,
        status: &str,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<u64>;
}

/// Days terminal instances are kept, per status, and (on the default policy only) days the
/// audit log is kept; `None` keeps them forever.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetentionPolicy {
    #[serde(default)]
    pub succeeded_days: Option<i32>,
    #[serde(default)]
    pub failed_days: Option<i32>,
    #[serde(default)]
    pub canceled_days: Option<i32>,
    #[serde(default)]
    pub timed_out_days: Option<i32>,
    /// The audit log's rows, by their time. Only the default policy sets it.
    #[serde(default)]
    pub audit_days: Option<i32>,
}

impl RetentionPolicy {
    /// (status, days) for every status the policy expires.
    pub fn ages(&self) -> impl Iterator<Item = (&'static str, i32)> {
        [
            ("succeeded", self.succeeded_days),
            ("failed", self.failed_days),
            ("canceled", self.canceled_days),
            ("timed_out", self.timed_out_days),
        ]
        .into_iter()
        .filter_map(|(status, days)| days.map(|d| (status, d)))
    }
}

/// What `DELETE /instances/{id}` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurgeOutcome {
    Purged,
    /// Not finished (its current status): it must be canceled first.
    NotTerminal(InstanceStatus),
    NotFound,
}

/// The `retention_policies` key of a workflow's policy, or of the default one.
pub(super) fn scope(workflow: Option<Uuid>) -> String {
    workflow.map_or_else(|| "default".to_owned(), |w| w.to_string())
}

// The statements `queries/retention.rs` runs, named for what they do.
pub(super) const DELETE_START_REQUESTS_OF: &str = "DELETE FROM start_requests WHERE instance_id IN (";
pub(super) const INSTANCE_STATUS: &str = "SELECT status FROM instances WHERE id = $1";
pub(super) const RETENTION_POLICY: &str =
    "SELECT succeeded_days, failed_days, canceled_days, timed_out_days, audit_days FROM \
    retention_policies WHERE scope = $1";
pub(super) const PUT_RETENTION: &str =
    "INSERT INTO retention_policies (scope, workflow_id, succeeded_days, failed_days, canceled_days, \
    timed_out_days, audit_days, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (scope) \
    DO UPDATE SET succeeded_days = $3, failed_days = $4, canceled_days = $5, timed_out_days = $6, \
    audit_days = $7, updated_at = $8";
pub(super) const WORKFLOW_RETENTIONS: &str =
    "SELECT workflow_id, succeeded_days, failed_days, canceled_days, timed_out_days FROM \
    retention_policies WHERE workflow_id IS NOT NULL";
/// What `sweep_expired` would delete, per workflow: its instances and their history entries (the
/// same candidates, so a preview counts what a sweep deletes).
pub(super) const EXPIRED_COUNTS: &str =
    "SELECT workflow_id, COUNT(*), CAST(SUM((SELECT COUNT(*) FROM instance_events e WHERE e.instance_id \
    = i.id)) AS BIGINT) FROM instances i WHERE status = $1 AND ended_at < $2 AND (workflow_id = $3 OR \
    ($3 IS NULL AND workflow_id NOT IN (SELECT workflow_id FROM retention_policies WHERE workflow_id IS \
    NOT NULL))) GROUP BY workflow_id";
/// The head of the delete of finished instances, before their ids.
pub(super) const DELETE_FINISHED_OF: &str =
    concatcp!("DELETE FROM instances WHERE status IN ", TERMINAL, " AND id IN (");
