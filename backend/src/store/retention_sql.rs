//! Purging finished instances (`DELETE /instances/{id}`) and retention (policies, and the
//! sweeper's deletes by age), shared by both backends like `sql.rs` and stamped onto each
//! store by `impl_retention_store!`.
//!
//! Every delete re-checks that the instance has finished in the deleting statement itself:
//! a retry in another process may bring a failed instance back to life between our read
//! and our write, and Postgres re-evaluates the `WHERE` of a `DELETE` on the row it locks.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
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

macro_rules! impl_retention_store {
    ($store:ty) => {
        const _: () = {
            use $crate::store::backend::Backend;
            use $crate::store::{Result, StoreError};
            use chrono::{DateTime, Utc};
            use uuid::Uuid;
            type Db = <$store as Backend>::Db;
            const SKIP_LOCKED: &str = <$store as Backend>::SKIP_LOCKED;

            impl $store {
                /// Deletes those of `ids` that have finished, with their idempotency records.
                async fn delete_finished(tx: &mut sqlx::Transaction<'_, Db>, ids: &[Uuid]) -> Result<u64> {
                    if ids.is_empty() {
                        return Ok(0);
                    }
                    let sql = format!("DELETE FROM instances WHERE status IN {} AND id IN (", $crate::store::statuses::TERMINAL);
                    let mut delete = sqlx::QueryBuilder::<Db>::new(sql);
                    let mut list = delete.separated(", ");
                    for id in ids {
                        list.push_bind(*id);
                    }
                    delete.push(") RETURNING id");
                    let deleted: Vec<(Uuid,)> = delete.build_query_as().fetch_all(&mut **tx).await?;
                    if !deleted.is_empty() {
                        let mut starts = sqlx::QueryBuilder::<Db>::new("DELETE FROM start_requests WHERE instance_id IN (");
                        let mut list = starts.separated(", ");
                        for (id,) in &deleted {
                            list.push_bind(*id);
                        }
                        starts.push(")");
                        starts.build().execute(&mut **tx).await?;
                    }
                    Ok(deleted.len() as u64)
                }
            }

            #[async_trait::async_trait]
            impl $crate::store::RetentionStore for $store {
                async fn purge_instance(&self, id: Uuid) -> Result<$crate::store::PurgeOutcome> {
                    use $crate::store::PurgeOutcome;
                    let _guard = self.write_guard().await;
                    let mut tx = self.pool().begin().await?;
                    if Self::delete_finished(&mut tx, &[id]).await? == 1 {
                        tx.commit().await?;
                        return Ok(PurgeOutcome::Purged);
                    }
                    let status: Option<(trellis_model::InstanceStatus,)> = sqlx::query_as("SELECT status FROM instances WHERE id = $1")
                        .bind(id).fetch_optional(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(status.map_or(PurgeOutcome::NotFound, |(s,)| PurgeOutcome::NotTerminal(s)))
                }

                async fn retention(&self, workflow: Option<Uuid>) -> Result<Option<$crate::store::RetentionPolicy>> {
                    Ok(sqlx::query_as(
                        "SELECT succeeded_days, failed_days, canceled_days, timed_out_days, audit_days FROM retention_policies WHERE scope = $1",
                    )
                    .bind($crate::store::retention_sql::scope(workflow)).fetch_optional(self.pool()).await?)
                }

                async fn put_retention(&self, workflow: Option<Uuid>, p: &$crate::store::RetentionPolicy) -> Result<()> {
                    let _guard = self.write_guard().await;
                    sqlx::query(
                        "INSERT INTO retention_policies (scope, workflow_id, succeeded_days, failed_days, canceled_days, timed_out_days, \
                         audit_days, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (scope) DO UPDATE SET \
                         succeeded_days = $3, failed_days = $4, canceled_days = $5, timed_out_days = $6, audit_days = $7, updated_at = $8",
                    )
                    .bind($crate::store::retention_sql::scope(workflow)).bind(workflow).bind(p.succeeded_days).bind(p.failed_days)
                    .bind(p.canceled_days).bind(p.timed_out_days).bind(p.audit_days).bind(Utc::now())
                    .execute(self.pool()).await.map_err(StoreError::from_sqlx)?;
                    Ok(())
                }

                async fn workflow_retentions(&self) -> Result<Vec<(Uuid, $crate::store::RetentionPolicy)>> {
                    let rows: Vec<(Uuid, Option<i32>, Option<i32>, Option<i32>, Option<i32>)> = sqlx::query_as(
                        "SELECT workflow_id, succeeded_days, failed_days, canceled_days, timed_out_days FROM retention_policies \
                         WHERE workflow_id IS NOT NULL",
                    )
                    .fetch_all(self.pool()).await?;
                    Ok(rows.into_iter().map(|(w, s, f, c, t)| {
                        (w, $crate::store::RetentionPolicy { succeeded_days: s, failed_days: f, canceled_days: c, timed_out_days: t, audit_days: None })
                    }).collect())
                }

                async fn expired_counts(&self, workflow: Option<Uuid>, status: &str, before: DateTime<Utc>) -> Result<Vec<(Uuid, i64, i64)>> {
                    // The same candidates as `sweep_expired`, so a preview counts what a sweep deletes.
                    let sql = format!(
                        "SELECT workflow_id, COUNT(*), CAST(SUM((SELECT COUNT(*) FROM instance_events e WHERE e.instance_id = i.id)) AS BIGINT) \
                         FROM instances i WHERE status = $1 AND ended_at < $2 AND (workflow_id = $3 OR ($3 IS NULL \
                         AND workflow_id NOT IN (SELECT workflow_id FROM retention_policies WHERE workflow_id IS NOT NULL))) \
                         GROUP BY workflow_id"
                    );
                    let rows: Vec<(Uuid, i64, Option<i64>)> = sqlx::query_as(&sql).bind(status).bind(before).bind(workflow)
                        .fetch_all(self.pool()).await?;
                    Ok(rows.into_iter().map(|(w, n, e)| (w, n, e.unwrap_or(0))).collect())
                }

                async fn sweep_expired(&self, workflow: Option<Uuid>, status: &str, before: DateTime<Utc>, limit: i64) -> Result<u64> {
                    let _guard = self.write_guard().await;
                    let mut tx = self.pool().begin().await?;
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
    };
}

pub(super) use impl_retention_store;
