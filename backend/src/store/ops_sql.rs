//! The SQL of operations on many instances (purge, bulk jobs, retention, the queue
//! inspector), shared by both backends like `sql.rs` and stamped onto each store by
//! `impl_ops_store!`.
//!
//! Every delete re-checks that the instance has finished in the deleting statement itself:
//! a retry in another process may bring a failed instance back to life between our read
//! and our write, and Postgres re-evaluates the `WHERE` of a `DELETE` on the row it locks.

use super::engine_records::InstanceQuery;
use super::ops_records::{BatchDone, JobLease, JobRow, PurgeOutcome, QueuePlace, RetentionPolicy};
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

pub(super) const JOB_COLUMNS: &str = "id, kind, filter, status, matched, processed, failed, error, created_by, \
     created_at, updated_at, last_id, until_id, lease_owner, lease_expires_at";
/// Finished instances: the only ones ever purged.
pub const TERMINAL: &str = "('succeeded', 'failed', 'canceled', 'timed_out')";
/// Unfinished instances: the ones a cancel applies to.
pub const UNFINISHED: &str = "('queued', 'running', 'paused')";
/// What a retry re-runs: instances that finished without succeeding.
pub const RETRYABLE: &str = "('failed', 'canceled', 'timed_out')";

#[async_trait]
pub trait OpsStore: Send + Sync + 'static {
    /// Deletes a finished instance with its nodes, work, history and idempotency records.
    async fn purge_instance(&self, id: Uuid) -> Result<PurgeOutcome>;
    /// Where a queued instance stands in its workflow's queue.
    async fn queue_place(&self, workflow: Uuid, id: Uuid) -> Result<QueuePlace>;

    /// Up to `limit` ids of instances matching `query` whose status is in `statuses` (one
    /// of [`TERMINAL`], [`UNFINISHED`]), after `after` and at most `until`, ascending.
    async fn matching_ids(
        &self,
        query: &InstanceQuery,
        statuses: &'static str,
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
    async fn finish_job(&self, lease: &JobLease, status: &str, error: Option<&str>) -> Result<bool>;
    /// Gives up a job's lease (a draining process), so another process resumes it at once.
    async fn release_job(&self, lease: &JobLease) -> Result<()>;

    /// The policy of `workflow`, or the default one (`None`).
    async fn retention(&self, workflow: Option<Uuid>) -> Result<Option<RetentionPolicy>>;
    async fn put_retention(&self, workflow: Option<Uuid>, policy: &RetentionPolicy) -> Result<()>;
    /// Workflows with a policy of their own.
    async fn workflow_retentions(&self) -> Result<Vec<(Uuid, RetentionPolicy)>>;
    /// Deletes up to `limit` instances with `status` that ended before `before`, of
    /// `workflow` or (for `None`) of every workflow without a policy of its own; returns
    /// how many.
    async fn sweep_expired(
        &self,
        workflow: Option<Uuid>,
        status: &str,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<u64>;
}

macro_rules! impl_ops_store {
    ($store:ty, $db:ty) => {
        impl $store {
            /// Deletes those of `ids` that have finished, with their idempotency records.
            async fn delete_finished(tx: &mut sqlx::Transaction<'_, $db>, ids: &[Uuid]) -> Result<u64> {
                if ids.is_empty() {
                    return Ok(0);
                }
                let sql = format!("DELETE FROM instances WHERE status IN {} AND id IN (", $crate::store::ops_sql::TERMINAL);
                let mut delete = sqlx::QueryBuilder::<$db>::new(sql);
                let mut list = delete.separated(", ");
                for id in ids {
                    list.push_bind(*id);
                }
                delete.push(") RETURNING id");
                let deleted: Vec<(Uuid,)> = delete.build_query_as().fetch_all(&mut **tx).await?;
                if !deleted.is_empty() {
                    let mut starts = sqlx::QueryBuilder::<$db>::new("DELETE FROM start_requests WHERE instance_id IN (");
                    let mut list = starts.separated(", ");
                    for (id,) in &deleted {
                        list.push_bind(*id);
                    }
                    starts.push(")");
                    starts.build().execute(&mut **tx).await?;
                }
                Ok(deleted.len() as u64)
            }

            /// Renews the job's lease and moves its position on, if the lease is still ours
            /// and the job still running (this also takes the job's row lock).
            async fn advance_job(tx: &mut sqlx::Transaction<'_, $db>, lease: &$crate::store::JobLease, done: &$crate::store::BatchDone) -> Result<bool> {
                let moved = sqlx::query(
                    "UPDATE jobs SET last_id = COALESCE($1, last_id), processed = processed + $2, failed = failed + $3, \
                     lease_expires_at = $4, updated_at = $5 WHERE id = $6 AND lease_owner = $7 AND status = 'running'",
                )
                .bind(done.last_id).bind(done.processed).bind(done.failed).bind(lease.until).bind(Utc::now())
                .bind(lease.job).bind(&lease.owner)
                .execute(&mut **tx).await?;
                Ok(moved.rows_affected() == 1)
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::OpsStore for $store {
            async fn purge_instance(&self, id: Uuid) -> Result<$crate::store::PurgeOutcome> {
                use $crate::store::PurgeOutcome;
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
                if Self::delete_finished(&mut tx, &[id]).await? == 1 {
                    tx.commit().await?;
                    return Ok(PurgeOutcome::Purged);
                }
                let status: Option<(String,)> = sqlx::query_as("SELECT status FROM instances WHERE id = $1")
                    .bind(id).fetch_optional(&mut *tx).await?;
                tx.commit().await?;
                Ok(status.map_or(PurgeOutcome::NotFound, |(s,)| PurgeOutcome::NotTerminal(s)))
            }

            async fn queue_place(&self, workflow: Uuid, id: Uuid) -> Result<$crate::store::QueuePlace> {
                // Admission takes the oldest queued id first (FIFO), so those before it are ahead.
                let (ahead,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status = 'queued' AND id < $2",
                )
                .bind(workflow).bind(id).fetch_one(&self.pool).await?;
                let sql = format!("SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status IN {ACTIVE}");
                let (active,): (i64,) = sqlx::query_as(&sql).bind(workflow).fetch_one(&self.pool).await?;
                Ok($crate::store::QueuePlace { ahead, active })
            }

            async fn matching_ids(
                &self, q: &$crate::store::InstanceQuery, statuses: &'static str, ended_before: Option<DateTime<Utc>>,
                after: Option<Uuid>, until: Uuid, limit: i64,
            ) -> Result<Vec<Uuid>> {
                // A plain range on the primary key (no `$7 IS NULL OR ...`), so each batch is an
                // index range scan from where the last one ended, not a scan from the start.
                let sql = format!(
                    "SELECT id FROM instances WHERE {FILTER} AND status IN {statuses} AND id > $7 \
                     AND id <= $8 AND ($10 IS NULL OR ended_at < $10) ORDER BY id LIMIT $9"
                );
                let after = after.unwrap_or(Uuid::nil());
                let rows: Vec<(Uuid,)> = bind_filter!(sqlx::query_as(&sql), q).bind(after).bind(until).bind(limit)
                    .bind(ended_before).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(|(id,)| id).collect())
            }

            async fn insert_job(&self, j: &$crate::store::JobRow) -> Result<()> {
                let _guard = self.write_guard().await;
                let sql = format!(
                    "INSERT INTO jobs ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                    $crate::store::ops_sql::JOB_COLUMNS
                );
                sqlx::query(&sql)
                    .bind(j.id).bind(&j.kind).bind(&j.filter).bind(&j.status).bind(j.matched).bind(j.processed).bind(j.failed)
                    .bind(&j.error).bind(&j.created_by).bind(j.created_at).bind(j.updated_at).bind(j.last_id).bind(j.until_id)
                    .bind(&j.lease_owner).bind(j.lease_expires_at)
                    .execute(&self.pool).await.map_err(StoreError::from_sqlx)?;
                Ok(())
            }

            async fn get_job(&self, id: Uuid) -> Result<Option<$crate::store::JobRow>> {
                let sql = format!("SELECT {} FROM jobs WHERE id = $1", $crate::store::ops_sql::JOB_COLUMNS);
                Ok(sqlx::query_as(&sql).bind(id).fetch_optional(&self.pool).await?)
            }

            async fn list_jobs(&self, before: Option<Uuid>, limit: i64) -> Result<Vec<$crate::store::JobRow>> {
                let sql = format!(
                    "SELECT {} FROM jobs WHERE ($1 IS NULL OR id < $1) ORDER BY id DESC LIMIT $2",
                    $crate::store::ops_sql::JOB_COLUMNS
                );
                Ok(sqlx::query_as(&sql).bind(before).bind(limit).fetch_all(&self.pool).await?)
            }

            async fn cancel_job(&self, id: Uuid, now: DateTime<Utc>) -> Result<Option<$crate::store::JobRow>> {
                let _guard = self.write_guard().await;
                sqlx::query(
                    "UPDATE jobs SET status = 'canceled', lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 \
                     WHERE id = $2 AND status IN ('queued', 'running')",
                )
                .bind(now).bind(id).execute(&self.pool).await?;
                self.get_job(id).await
            }

            async fn claim_job(&self, owner: &str, now: DateTime<Utc>, lease_until: DateTime<Utc>) -> Result<Option<$crate::store::JobRow>> {
                let _guard = self.write_guard().await;
                let sql = format!(
                    "UPDATE jobs SET status = 'running', lease_owner = $1, lease_expires_at = $2, updated_at = $3 \
                     WHERE id IN (SELECT id FROM jobs WHERE status IN ('queued', 'running') \
                       AND (lease_expires_at IS NULL OR lease_expires_at <= $3) ORDER BY created_at LIMIT 1{SKIP_LOCKED}) \
                     AND status IN ('queued', 'running') AND (lease_expires_at IS NULL OR lease_expires_at <= $3) \
                     RETURNING {}",
                    $crate::store::ops_sql::JOB_COLUMNS
                );
                Ok(sqlx::query_as(&sql).bind(owner).bind(lease_until).bind(now).fetch_optional(&self.pool).await?)
            }

            async fn purge_batch(&self, lease: &$crate::store::JobLease, ids: &[Uuid], done: &$crate::store::BatchDone) -> Result<bool> {
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
                // The fence first: it locks the job row, so a canceled job deletes nothing more.
                let progress = $crate::store::BatchDone { last_id: done.last_id, processed: 0, failed: 0 };
                if !Self::advance_job(&mut tx, lease, &progress).await? {
                    return Ok(false);
                }
                let deleted = Self::delete_finished(&mut tx, ids).await? as i64;
                sqlx::query("UPDATE jobs SET processed = processed + $1 WHERE id = $2")
                    .bind(deleted).bind(lease.job).execute(&mut *tx).await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn record_batch(&self, lease: &$crate::store::JobLease, done: &$crate::store::BatchDone) -> Result<bool> {
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
                let moved = Self::advance_job(&mut tx, lease, done).await?;
                tx.commit().await?;
                Ok(moved)
            }

            async fn finish_job(&self, lease: &$crate::store::JobLease, status: &str, error: Option<&str>) -> Result<bool> {
                let _guard = self.write_guard().await;
                let done = sqlx::query(
                    "UPDATE jobs SET status = $1, error = $2, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3 \
                     WHERE id = $4 AND lease_owner = $5 AND status = 'running'",
                )
                .bind(status).bind(error).bind(Utc::now()).bind(lease.job).bind(&lease.owner)
                .execute(&self.pool).await?;
                Ok(done.rows_affected() == 1)
            }

            async fn release_job(&self, lease: &$crate::store::JobLease) -> Result<()> {
                let _guard = self.write_guard().await;
                sqlx::query("UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2")
                    .bind(lease.job).bind(&lease.owner).execute(&self.pool).await?;
                Ok(())
            }

            async fn retention(&self, workflow: Option<Uuid>) -> Result<Option<$crate::store::RetentionPolicy>> {
                Ok(sqlx::query_as(
                    "SELECT succeeded_days, failed_days, canceled_days, timed_out_days, audit_days FROM retention_policies WHERE scope = $1",
                )
                .bind($crate::store::ops_sql::scope(workflow)).fetch_optional(&self.pool).await?)
            }

            async fn put_retention(&self, workflow: Option<Uuid>, p: &$crate::store::RetentionPolicy) -> Result<()> {
                let _guard = self.write_guard().await;
                sqlx::query(
                    "INSERT INTO retention_policies (scope, workflow_id, succeeded_days, failed_days, canceled_days, timed_out_days, \
                     audit_days, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (scope) DO UPDATE SET \
                     succeeded_days = $3, failed_days = $4, canceled_days = $5, timed_out_days = $6, audit_days = $7, updated_at = $8",
                )
                .bind($crate::store::ops_sql::scope(workflow)).bind(workflow).bind(p.succeeded_days).bind(p.failed_days)
                .bind(p.canceled_days).bind(p.timed_out_days).bind(p.audit_days).bind(Utc::now())
                .execute(&self.pool).await.map_err(StoreError::from_sqlx)?;
                Ok(())
            }

            async fn workflow_retentions(&self) -> Result<Vec<(Uuid, $crate::store::RetentionPolicy)>> {
                let rows: Vec<(Uuid, Option<i32>, Option<i32>, Option<i32>, Option<i32>)> = sqlx::query_as(
                    "SELECT workflow_id, succeeded_days, failed_days, canceled_days, timed_out_days FROM retention_policies \
                     WHERE workflow_id IS NOT NULL",
                )
                .fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(|(w, s, f, c, t)| {
                    (w, $crate::store::RetentionPolicy { succeeded_days: s, failed_days: f, canceled_days: c, timed_out_days: t, audit_days: None })
                }).collect())
            }

            async fn sweep_expired(&self, workflow: Option<Uuid>, status: &str, before: DateTime<Utc>, limit: i64) -> Result<u64> {
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
                // Candidates another process is deleting right now are skipped, not waited for.
                let sql = format!(
                    "SELECT id FROM instances WHERE status = $1 AND ended_at < $2 AND (workflow_id = $3 OR ($3 IS NULL \
                     AND workflow_id NOT IN (SELECT workflow_id FROM retention_policies WHERE workflow_id IS NOT NULL))) \
                     ORDER BY ended_at LIMIT $4{SKIP_LOCKED}"
                );
                let ids: Vec<(Uuid,)> = sqlx::query_as(&sql).bind(status).bind(before).bind(workflow).bind(limit)
                    .fetch_all(&mut *tx).await?;
                let ids: Vec<Uuid> = ids.into_iter().map(|(id,)| id).collect();
                let deleted = Self::delete_finished(&mut tx, &ids).await?;
                tx.commit().await?;
                Ok(deleted)
            }
        }
    };
}

/// The `retention_policies` key of a workflow's policy, or of the default one.
pub(super) fn scope(workflow: Option<Uuid>) -> String {
    workflow.map_or_else(|| "default".to_owned(), |w| w.to_string())
}

pub(super) use impl_ops_store;
