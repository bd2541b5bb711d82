//! The durable work queue's SQL (timers, dispatched attempts, tasks), shared by both backends
//! like `sql.rs` and stamped onto each store by `impl_work_queue!`. Every claim bumps the
//! item's `lease_epoch`: the fence a transition checks before consuming the item, so the work
//! of an expired lease can never be applied twice.

use super::engine_records::{Fence, WorkItem};
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    /// Leases up to `limit` due work items (not tasks) whose lease is free or expired: node
    /// attempts to run, or (`timers`) everything else — delays ending, retry backoffs and
    /// timeouts, which run no node code and are claimed in bigger batches.
    async fn claim_due(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
        timers: bool,
    ) -> Result<Vec<WorkItem>>;
    /// When the next work item becomes claimable.
    async fn next_due(&self) -> Result<Option<DateTime<Utc>>>;
    /// Leases the oldest due task of `queue` for an external worker.
    async fn claim_task(
        &self,
        queue: &str,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<WorkItem>>;
    /// Extends a lease while its holder still holds it; false once it was lost.
    async fn extend_lease(&self, fence: &Fence, until: DateTime<Utc>) -> Result<bool>;
    async fn work_item(&self, id: Uuid) -> Result<Option<WorkItem>>;
    /// Gives up every lease `owner` holds (a draining process), so others claim at once.
    async fn release_leases(&self, owner: &str) -> Result<u64>;
}

macro_rules! impl_work_queue {
    ($store:ty) => {
        const _: () = {
            use $crate::store::backend::Backend;
            use $crate::store::engine_records::{Fence, WorkItem};
            use $crate::store::engine_sql::WORK_COLUMNS;
            use $crate::store::Result;
            use chrono::{DateTime, Utc};
            use uuid::Uuid;
            const SKIP_LOCKED: &str = <$store as Backend>::SKIP_LOCKED;

            #[async_trait::async_trait]
            impl $crate::store::WorkQueue for $store {
                async fn claim_due(&self, owner: &str, now: DateTime<Utc>, lease_until: DateTime<Utc>, limit: i64, timers: bool) -> Result<Vec<WorkItem>> {
                    let _guard = self.write_guard().await;
                    let kind = if timers { "kind <> 'run'" } else { "kind = 'run'" };
                    // Fair across workflows: the oldest due item of every workflow comes before the
                    // second oldest of any, so a flooded workflow cannot starve the others. The
                    // window picks candidates; the locking select skips rows another process is
                    // claiming (a window query itself cannot take row locks).
                    let sql = format!(
                        "UPDATE work SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires_at = $2 \
                         WHERE id IN (SELECT id FROM work WHERE id IN (SELECT id FROM (SELECT id, due_at, \
                            ROW_NUMBER() OVER (PARTITION BY workflow_id ORDER BY due_at) AS turn FROM work \
                            WHERE queue IS NULL AND {kind} AND due_at <= $3 AND (lease_expires_at IS NULL OR lease_expires_at <= $3)) ranked \
                          ORDER BY turn, due_at LIMIT $4) \
                         AND (lease_expires_at IS NULL OR lease_expires_at <= $3){SKIP_LOCKED}) \
                         RETURNING {WORK_COLUMNS}"
                    );
                    Ok(sqlx::query_as(&sql).bind(owner).bind(lease_until).bind(now).bind(limit).fetch_all(self.pool()).await?)
                }

                async fn next_due(&self) -> Result<Option<DateTime<Utc>>> {
                    let (due,): (Option<DateTime<Utc>>,) = sqlx::query_as(
                        "SELECT MIN(CASE WHEN lease_expires_at IS NULL THEN due_at ELSE lease_expires_at END) FROM work WHERE queue IS NULL",
                    ).fetch_one(self.pool()).await?;
                    Ok(due)
                }

                async fn claim_task(&self, queue: &str, owner: &str, now: DateTime<Utc>, lease_until: DateTime<Utc>) -> Result<Option<WorkItem>> {
                    let _guard = self.write_guard().await;
                    let sql = format!(
                        "UPDATE work SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires_at = $2 \
                         WHERE id IN (SELECT id FROM work WHERE queue = $3 AND due_at <= $4 \
                         AND (lease_expires_at IS NULL OR lease_expires_at <= $4) ORDER BY due_at LIMIT 1{SKIP_LOCKED}) \
                         RETURNING {WORK_COLUMNS}"
                    );
                    Ok(sqlx::query_as(&sql).bind(owner).bind(lease_until).bind(queue).bind(now).fetch_optional(self.pool()).await?)
                }

                async fn extend_lease(&self, fence: &Fence, until: DateTime<Utc>) -> Result<bool> {
                    let _guard = self.write_guard().await;
                    let done = sqlx::query("UPDATE work SET lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3 AND lease_epoch = $4")
                        .bind(until).bind(fence.work_id).bind(&fence.owner).bind(fence.epoch).execute(self.pool()).await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn work_item(&self, id: Uuid) -> Result<Option<WorkItem>> {
                    let sql = format!("SELECT {WORK_COLUMNS} FROM work WHERE id = $1");
                    Ok(sqlx::query_as(&sql).bind(id).fetch_optional(self.pool()).await?)
                }

                async fn release_leases(&self, owner: &str) -> Result<u64> {
                    let _guard = self.write_guard().await;
                    let done = sqlx::query("UPDATE work SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1")
                        .bind(owner).execute(self.pool()).await?;
                    Ok(done.rows_affected())
                }
            }
        };
    };
}

pub(super) use impl_work_queue;
