//! `work.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::instances::WORK_COLUMNS;
use crate::store::phases::PHASES;
use crate::store::work::{Fence, WorkItem, WorkRow};
use crate::store::work::{NextDue, DEFER_UNBEGUN, EXTEND_LEASE, NEXT_DUE, RELEASE_LEASES, WORK_ITEM};
use crate::store::Result;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use uuid::Uuid;
const SKIP_LOCKED: &str = <Store as Backend>::SKIP_LOCKED;
/// Fair across workflows: the oldest due item of every workflow comes before the
/// second oldest of any, so a flooded workflow cannot starve the others. The
/// window picks candidates; the locking select skips rows another process is
/// claiming (a window query itself cannot take row locks).
const CLAIM_DUE_HEAD: &str =
    "UPDATE work SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires_at = $2 WHERE id IN \
    (SELECT id FROM work WHERE id IN (SELECT id FROM (SELECT id, due_at, ROW_NUMBER() OVER (PARTITION \
    BY workflow_id ORDER BY due_at) AS turn FROM work WHERE queue IS NULL AND ";
const CLAIM_DUE_TAIL: &str = concatcp!(
    " AND due_at <= $3 AND (lease_expires_at IS NULL OR lease_expires_at <= $3)) ranked ORDER BY turn, \
    due_at LIMIT $4) AND (lease_expires_at IS NULL OR lease_expires_at <= $3)",
    SKIP_LOCKED,
    ") RETURNING ",
    WORK_COLUMNS
);
const CLAIM_DUE_RUNS: &str = concatcp!(CLAIM_DUE_HEAD, "kind = 'run'", CLAIM_DUE_TAIL);
/// Timers in due order, without the runs' turns between workflows: they take no worker
/// slot, so a flooded workflow holds back no other's beyond their due order; and ranking
/// every due row per claim was what made a burst of thousands slow to claim.
const CLAIM_TIMERS: &str = concatcp!(
    "UPDATE work SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires_at = $2 WHERE id IN \
    (SELECT id FROM work WHERE queue IS NULL AND kind <> 'run' AND due_at <= $3 AND (lease_expires_at IS \
    NULL OR lease_expires_at <= $4) ORDER BY due_at LIMIT $5",
    SKIP_LOCKED,
    ") AND (lease_expires_at IS NULL OR lease_expires_at <= $4) RETURNING ",
    WORK_COLUMNS
);
const CLAIM_TASK: &str = concatcp!(
    "UPDATE work SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires_at = $2 WHERE id IN \
    (SELECT id FROM work WHERE queue = $3 AND due_at <= $4 AND (lease_expires_at IS NULL OR \
    lease_expires_at <= $4) ORDER BY due_at LIMIT 1",
    SKIP_LOCKED,
    ") RETURNING ",
    WORK_COLUMNS
);

#[async_trait::async_trait]
impl crate::store::WorkQueue for Store {
    async fn claim_due(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<WorkItem>> {
        let _guard = self.write_guard().await;
        PHASES.autocommit(1);
        let claim = sqlx::query_as::<_, WorkRow>(CLAIM_DUE_RUNS).bind(owner).bind(lease_until).bind(now).bind(limit);
        Ok(claim.fetch_all(self.pool()).await?.into_iter().map(WorkItem::from).collect())
    }

    async fn claim_timers(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<WorkItem>> {
        let _guard = self.write_guard().await;
        PHASES.autocommit(1);
        let claim = sqlx::query_as::<_, WorkRow>(CLAIM_TIMERS)
            .bind(owner)
            .bind(lease_until)
            .bind(horizon)
            .bind(now)
            .bind(limit);
        Ok(claim.fetch_all(self.pool()).await?.into_iter().map(WorkItem::from).collect())
    }

    async fn next_due(&self) -> Result<NextDue> {
        let (run, timer): (Option<DateTime<Utc>>, Option<DateTime<Utc>>) =
            sqlx::query_as(NEXT_DUE).fetch_one(self.pool()).await?;
        Ok(NextDue { run, timer })
    }

    async fn claim_task(
        &self,
        queue: &str,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<WorkItem>> {
        let _guard = self.write_guard().await;
        let claim = sqlx::query_as::<_, WorkRow>(CLAIM_TASK).bind(owner).bind(lease_until).bind(queue).bind(now);
        Ok(claim.fetch_optional(self.pool()).await?.map(WorkItem::from))
    }

    async fn extend_lease(&self, fence: &Fence, until: DateTime<Utc>) -> Result<bool> {
        self.fenced_update(EXTEND_LEASE, fence, until).await
    }

    async fn work_item(&self, id: Uuid) -> Result<Option<WorkItem>> {
        Ok(sqlx::query_as::<_, WorkRow>(WORK_ITEM).bind(id).fetch_optional(self.pool()).await?.map(WorkItem::from))
    }

    async fn release_leases(&self, owner: &str) -> Result<u64> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(RELEASE_LEASES).bind(owner).execute(self.pool()).await?;
        Ok(done.rows_affected())
    }

    async fn defer_unbegun(&self, fence: &Fence, due: DateTime<Utc>) -> Result<bool> {
        self.fenced_update(DEFER_UNBEGUN, fence, due).await
    }
}

impl Store {
    /// Runs `statement` (`$1` a time, then the fence's work id, owner and epoch) on the item
    /// `fence` leases; whether the lease was still its holder's.
    async fn fenced_update(&self, statement: &'static str, fence: &Fence, at: DateTime<Utc>) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(statement)
            .bind(at)
            .bind(fence.work_id)
            .bind(&fence.owner)
            .bind(fence.epoch)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
