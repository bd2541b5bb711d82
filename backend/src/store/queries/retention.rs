//! `retention.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::{push_binds, Store};
use crate::store::backend::Backend;
use crate::store::retention::{
    DELETE_FINISHED_OF, DELETE_START_REQUESTS_OF, EXPIRED_COUNTS, INSTANCE_STATUS, PUT_RETENTION, RETENTION_POLICY,
    WORKFLOW_RETENTIONS,
};
use crate::store::{Result, StoreError};
use chrono::{DateTime, Utc};
use const_format::concatcp;
use uuid::Uuid;
type Db = <Store as Backend>::Db;
const SKIP_LOCKED: &str = <Store as Backend>::SKIP_LOCKED;
const SWEEP_EXPIRED: &str = concatcp!(
    "SELECT id FROM instances WHERE status = $1 AND ended_at < $2 AND (workflow_id = $3 OR ($3 IS NULL \
    AND workflow_id NOT IN (SELECT workflow_id FROM retention_policies WHERE workflow_id IS NOT NULL))) \
    ORDER BY ended_at LIMIT $4",
    SKIP_LOCKED
);

impl Store {
    /// Deletes those of `ids` that have finished, with their idempotency records.
    pub(super) async fn delete_finished(tx: &mut sqlx::Transaction<'_, Db>, ids: &[Uuid]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut delete = sqlx::QueryBuilder::<Db>::new(DELETE_FINISHED_OF);
        push_binds(&mut delete, ids.iter().copied());
        delete.push(") RETURNING id");
        let deleted: Vec<(Uuid,)> = delete.build_query_as().keep_built().fetch_all(&mut **tx).await?;
        if !deleted.is_empty() {
            let mut starts = sqlx::QueryBuilder::<Db>::new(DELETE_START_REQUESTS_OF);
            push_binds(&mut starts, deleted.iter().map(|(id,)| *id));
            starts.push(")");
            starts.build().keep_built().execute(&mut **tx).await?;
        }
        Ok(deleted.len() as u64)
    }
}

#[async_trait::async_trait]
impl crate::store::RetentionStore for Store {
    async fn purge_instance(&self, id: Uuid) -> Result<crate::store::PurgeOutcome> {
        use crate::store::PurgeOutcome;
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        if Self::delete_finished(&mut tx, &[id]).await? == 1 {
            tx.commit().await?;
            return Ok(PurgeOutcome::Purged);
        }
        let status: Option<(trellis_model::InstanceStatus,)> =
            sqlx::query_as(INSTANCE_STATUS).bind(id).fetch_optional(&mut *tx).await?;
        tx.commit().await?;
        Ok(status.map_or(PurgeOutcome::NotFound, |(s,)| PurgeOutcome::NotTerminal(s)))
    }

    async fn retention(&self, workflow: Option<Uuid>) -> Result<Option<crate::store::RetentionPolicy>> {
        Ok(sqlx::query_as(RETENTION_POLICY)
            .bind(crate::store::retention::scope(workflow))
            .fetch_optional(self.pool())
            .await?)
    }

    async fn put_retention(&self, workflow: Option<Uuid>, p: &crate::store::RetentionPolicy) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(PUT_RETENTION)
            .bind(crate::store::retention::scope(workflow))
            .bind(workflow)
            .bind(p.succeeded_days)
            .bind(p.failed_days)
            .bind(p.canceled_days)
            .bind(p.timed_out_days)
            .bind(p.audit_days)
            .bind(Utc::now())
            .execute(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn workflow_retentions(&self) -> Result<Vec<(Uuid, crate::store::RetentionPolicy)>> {
        let rows: Vec<(Uuid, Option<i32>, Option<i32>, Option<i32>, Option<i32>)> =
            sqlx::query_as(WORKFLOW_RETENTIONS).fetch_all(self.pool()).await?;
        Ok(rows
            .into_iter()
            .map(|(w, s, f, c, t)| {
                (
                    w,
                    crate::store::RetentionPolicy {
                        succeeded_days: s,
                        failed_days: f,
                        canceled_days: c,
                        timed_out_days: t,
                        audit_days: None,
                    },
                )
            })
            .collect())
    }

    async fn expired_counts(
        &self,
        workflow: Option<Uuid>,
        status: &str,
        before: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, i64, i64)>> {
        let rows: Vec<(Uuid, i64, Option<i64>)> =
            sqlx::query_as(EXPIRED_COUNTS).bind(status).bind(before).bind(workflow).fetch_all(self.pool()).await?;
        Ok(rows.into_iter().map(|(w, n, e)| (w, n, e.unwrap_or(0))).collect())
    }

    async fn sweep_expired(
        &self,
        workflow: Option<Uuid>,
        status: &str,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<u64> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // Candidates another process is deleting right now are skipped, not waited for.
        let ids: Vec<(Uuid,)> = sqlx::query_as(SWEEP_EXPIRED)
            .bind(status)
            .bind(before)
            .bind(workflow)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?;
        let ids: Vec<Uuid> = ids.into_iter().map(|(id,)| id).collect();
        let deleted = Self::delete_finished(&mut tx, &ids).await?;
        tx.commit().await?;
        Ok(deleted)
    }
}
