//! `jobs.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::Store;
use crate::store::backend::Backend;
use crate::store::jobs::{
    ADVANCE_JOB, CANCEL_JOB, FINISH_JOB, GET_JOB, INSERT_JOB, LIST_JOBS, MATCHING_IDS_HEAD, PURGE_BATCH, RELEASE_JOB,
};
use crate::store::{Result, StoreError};
use chrono::{DateTime, Utc};
use const_format::concatcp;
use uuid::Uuid;
type Db = <Store as Backend>::Db;
const SKIP_LOCKED: &str = <Store as Backend>::SKIP_LOCKED;
const CLAIM_JOB: &str = concatcp!(
    "UPDATE jobs SET status = 'running', lease_owner = $1, lease_expires_at = $2, updated_at = $3 WHERE \
    id IN (SELECT id FROM jobs WHERE status IN ('queued', 'running') AND (lease_expires_at IS NULL OR \
    lease_expires_at <= $3) ORDER BY created_at LIMIT 1",
    SKIP_LOCKED,
    ") AND status IN ('queued', 'running') AND (lease_expires_at IS NULL OR lease_expires_at <= $3) \
    RETURNING ",
    crate::store::jobs::JOB_COLUMNS
);

impl Store {
    /// Renews the job's lease and moves its position on, if the lease is still ours
    /// and the job still running (this also takes the job's row lock).
    async fn advance_job(
        tx: &mut sqlx::Transaction<'_, Db>,
        lease: &crate::store::JobLease,
        done: &crate::store::BatchDone,
    ) -> Result<bool> {
        let moved = sqlx::query(ADVANCE_JOB)
            .bind(done.last_id)
            .bind(done.processed)
            .bind(done.failed)
            .bind(lease.until)
            .bind(Utc::now())
            .bind(lease.job)
            .bind(&lease.owner)
            .execute(&mut **tx)
            .await?;
        Ok(moved.rows_affected() == 1)
    }
}

#[async_trait::async_trait]
impl crate::store::JobStore for Store {
    async fn matching_ids(
        &self,
        q: &crate::store::InstanceQuery,
        statuses: crate::store::StatusSet,
        ended_before: Option<DateTime<Utc>>,
        after: Option<Uuid>,
        until: Uuid,
        limit: i64,
    ) -> Result<Vec<Uuid>> {
        // A plain range on the primary key, so each batch is an index range scan
        // from where the last one ended, not a scan from the start.
        let mut sql = sqlx::QueryBuilder::<Db>::new(MATCHING_IDS_HEAD);
        q.push_where(&mut sql);
        sql.push(format!(" AND status IN {}", statuses.sql()));
        sql.push(" AND id > ").push_bind(after.unwrap_or(Uuid::nil()));
        sql.push(" AND id <= ").push_bind(until);
        if let Some(ended_before) = ended_before {
            sql.push(" AND ended_at < ").push_bind(ended_before);
        }
        sql.push(" ORDER BY id LIMIT ").push_bind(limit);
        let rows: Vec<(Uuid,)> = sql.build_query_as().keep_built().fetch_all(self.pool()).await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    async fn insert_job(&self, j: &crate::store::JobRow) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(INSERT_JOB)
            .bind(j.id)
            .bind(j.kind)
            .bind(&j.filter)
            .bind(j.status)
            .bind(j.matched)
            .bind(j.processed)
            .bind(j.failed)
            .bind(&j.error)
            .bind(&j.created_by)
            .bind(j.created_at)
            .bind(j.updated_at)
            .bind(j.last_id)
            .bind(j.until_id)
            .bind(&j.lease_owner)
            .bind(j.lease_expires_at)
            .execute(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn get_job(&self, id: Uuid) -> Result<Option<crate::store::JobRow>> {
        Ok(sqlx::query_as(GET_JOB).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn list_jobs(&self, before: Option<Uuid>, limit: i64) -> Result<Vec<crate::store::JobRow>> {
        Ok(sqlx::query_as(LIST_JOBS).bind(before).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn cancel_job(&self, id: Uuid, now: DateTime<Utc>) -> Result<Option<crate::store::JobRow>> {
        let _guard = self.write_guard().await;
        sqlx::query(CANCEL_JOB).bind(now).bind(id).execute(self.pool()).await?;
        self.get_job(id).await
    }

    async fn claim_job(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<crate::store::JobRow>> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query_as(CLAIM_JOB).bind(owner).bind(lease_until).bind(now).fetch_optional(self.pool()).await?)
    }

    async fn purge_batch(
        &self,
        lease: &crate::store::JobLease,
        ids: &[Uuid],
        done: &crate::store::BatchDone,
    ) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // The fence first: it locks the job row, so a canceled job deletes nothing more.
        let progress = crate::store::BatchDone { last_id: done.last_id, processed: 0, failed: 0 };
        if !Self::advance_job(&mut tx, lease, &progress).await? {
            return Ok(false);
        }
        let deleted = Self::delete_finished(&mut tx, ids).await? as i64;
        sqlx::query(PURGE_BATCH).bind(deleted).bind(lease.job).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn record_batch(&self, lease: &crate::store::JobLease, done: &crate::store::BatchDone) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let moved = Self::advance_job(&mut tx, lease, done).await?;
        tx.commit().await?;
        Ok(moved)
    }

    async fn finish_job(
        &self,
        lease: &crate::store::JobLease,
        status: trellis_model::JobStatus,
        error: Option<&str>,
    ) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(FINISH_JOB)
            .bind(status)
            .bind(error)
            .bind(Utc::now())
            .bind(lease.job)
            .bind(&lease.owner)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_job(&self, lease: &crate::store::JobLease) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(RELEASE_JOB).bind(lease.job).bind(&lease.owner).execute(self.pool()).await?;
        Ok(())
    }
}
