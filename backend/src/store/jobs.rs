//! The bulk jobs (`POST /instances/purge|cancel|retry`): their rows, the trait and column
//! list here, the SQL in `queries/jobs.rs` (one body for both backends). A job is leased like `work`
//! (`SKIP_LOCKED`); every batch first moves the job on under its lease (the fence), so a
//! canceled job or a lost lease writes nothing more. A purge batch deletes through
//! `delete_finished` (`retention.rs`).

use super::instance_query::InstanceQuery;
use super::statuses::StatusSet;
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use serde_json::Value;
use sqlx::types::Json;
use trellis_model::{JobKind, JobStatus};
use uuid::Uuid;

/// A bulk action over the instances a filter matches, processed in batches.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: Uuid,
    pub kind: JobKind,
    /// The list filter as the client sent it (`workflow`, `status`, ...).
    pub filter: Json<Value>,
    pub status: JobStatus,
    pub matched: i64,
    pub processed: i64,
    pub failed: i64,
    pub error: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Keyset position: the last instance id a batch looked at.
    pub last_id: Option<Uuid>,
    /// The newest instance id the job may touch (an id made when the job was created).
    pub until_id: Uuid,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// Proof of holding a job's lease; progress written with a stale one changes nothing.
#[derive(Debug, Clone)]
pub struct JobLease {
    pub job: Uuid,
    pub owner: String,
    /// Renewed with every batch.
    pub until: DateTime<Utc>,
}

/// What one batch did, recorded with the job's progress.
#[derive(Debug, Clone, Default)]
pub struct BatchDone {
    /// The last id the batch looked at: the next batch starts after it.
    pub last_id: Option<Uuid>,
    pub processed: i64,
    pub failed: i64,
}

pub(super) const JOB_COLUMNS: &str = "id, kind, filter, status, matched, processed, failed, error, created_by, \
     created_at, updated_at, last_id, until_id, lease_owner, lease_expires_at";

#[async_trait]
pub trait JobStore: Send + Sync + 'static {
    /// Up to `limit` ids of instances matching `query` whose status is in `statuses`,
    /// after `after` and at most `until`, ascending: the next batch of a job.
    async fn matching_ids(
        &self,
        query: &InstanceQuery,
        statuses: StatusSet,
        ended_before: Option<DateTime<Utc>>,
        after: Option<Uuid>,
        until: Uuid,
        limit: i64,
    ) -> Result<Vec<Uuid>>;

    async fn insert_job(&self, job: &JobRow) -> Result<()>;
    async fn get_job(&self, id: Uuid) -> Result<Option<JobRow>>;
    /// Newest first, before the cursor `before`.
    async fn list_jobs(&self, before: Option<Uuid>, limit: i64) -> Result<Vec<JobRow>>;
    /// Marks a queued or running job canceled; `None` if there is no such job.
    async fn cancel_job(&self, id: Uuid, now: DateTime<Utc>) -> Result<Option<JobRow>>;
    /// Leases the oldest open job whose lease is free or expired, marking it running.
    async fn claim_job(&self, owner: &str, now: DateTime<Utc>, lease_until: DateTime<Utc>) -> Result<Option<JobRow>>;
    /// Purges the finished ones of `ids` and records the batch, in one transaction; `false`
    /// (and nothing deleted) if the lease was lost or the job canceled meanwhile.
    async fn purge_batch(&self, lease: &JobLease, ids: &[Uuid], done: &BatchDone) -> Result<bool>;
    /// Records a batch processed outside the store (cancels); `false` if the lease was lost.
    async fn record_batch(&self, lease: &JobLease, done: &BatchDone) -> Result<bool>;
    /// Ends a running job with `status`; `false` if the lease was lost or it was canceled.
    async fn finish_job(&self, lease: &JobLease, status: JobStatus, error: Option<&str>) -> Result<bool>;
    /// Gives up a job's lease (a draining process), so another process resumes it at once.
    async fn release_job(&self, lease: &JobLease) -> Result<()>;
}

// The statements `queries/jobs.rs` runs, named for what they do.
pub(super) const ADVANCE_JOB: &str =
    "UPDATE jobs SET last_id = COALESCE($1, last_id), processed = processed + $2, failed = failed + $3, \
    lease_expires_at = $4, updated_at = $5 WHERE id = $6 AND lease_owner = $7 AND status = 'running'";
pub(super) const MATCHING_IDS_HEAD: &str = "SELECT id FROM instances";
pub(super) const INSERT_JOB: &str = concatcp!(
    "INSERT INTO jobs (",
    crate::store::jobs::JOB_COLUMNS,
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
);
pub(super) const GET_JOB: &str = concatcp!("SELECT ", crate::store::jobs::JOB_COLUMNS, " FROM jobs WHERE id = $1");
pub(super) const LIST_JOBS: &str = concatcp!(
    "SELECT ",
    crate::store::jobs::JOB_COLUMNS,
    " FROM jobs WHERE ($1 IS NULL OR id < $1) ORDER BY id DESC LIMIT $2"
);
pub(super) const CANCEL_JOB: &str =
    "UPDATE jobs SET status = 'canceled', lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 \
    WHERE id = $2 AND status IN ('queued', 'running')";
pub(super) const PURGE_BATCH: &str = "UPDATE jobs SET processed = processed + $1 WHERE id = $2";
pub(super) const FINISH_JOB: &str =
    "UPDATE jobs SET status = $1, error = $2, lease_owner = NULL, lease_expires_at = NULL, updated_at = \
    $3 WHERE id = $4 AND lease_owner = $5 AND status = 'running'";
pub(super) const RELEASE_JOB: &str =
    "UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2";
