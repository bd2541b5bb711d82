//! The bulk jobs' SQL (`POST /instances/purge|cancel|retry`), the trait and column
//! list here, the SQL in `shared/jobs.rs` (one body for both backends). A job is leased like `work`
//! (`SKIP_LOCKED`); every batch first moves the job on under its lease (the fence), so a
//! canceled job or a lost lease writes nothing more. A purge batch deletes through
//! `delete_finished` (`retention_sql.rs`).

use super::instance_query::InstanceQuery;
use super::job_records::{BatchDone, JobLease, JobRow};
use super::statuses::StatusSet;
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use trellis_model::JobStatus;
use uuid::Uuid;

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
