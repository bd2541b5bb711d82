//! The durable work queue (timers, dispatched attempts, tasks): its trait and statements here,
//! its items typed in `work/items.rs`, the SQL in `queries/work.rs` (one body for both
//! backends). Every claim bumps the item's `lease_epoch`: the fence a transition checks before
//! consuming the item, so the work of an expired lease can never be applied twice.

mod items;

pub(super) use items::WorkRow;
pub use items::{ChildEnd, Fence, NewWork, NodeAttempt, RunEnd, UnreadableWork, Work, WorkColumns, WorkItem, WorkKind};

use super::instances::WORK_COLUMNS;
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use uuid::Uuid;

#[async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    /// Leases up to `limit` due node attempts whose lease is free or expired, taking turns
    /// between workflows (the oldest due attempt of each before the second oldest of any).
    async fn claim_due(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<WorkItem>>;
    /// Leases up to `limit` timers — everything but node attempts and tasks: delays ending,
    /// retry backoffs, timeouts, wakes — due by `horizon` (ahead of `now`: the timer wheel
    /// holds them until they are due), earliest first, whose lease is free or expired at `now`.
    async fn claim_timers(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<WorkItem>>;
    /// When the next node attempt and the next timer become claimable.
    async fn next_due(&self) -> Result<NextDue>;
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
    /// Puts back a node attempt its holder has not begun (a shared limit had no place for
    /// it), due again at `due`, as if never claimed: its next claim is not taken for a
    /// process that died running it. Only a first claim (epoch 1) may be put back, so no
    /// earlier holder's fence can match again. `false`: the lease was no longer the holder's.
    async fn defer_unbegun(&self, fence: &Fence, due: DateTime<Utc>) -> Result<bool>;
}

/// When the next work item of each sort becomes claimable (none: nothing waits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NextDue {
    /// The next node attempt.
    pub run: Option<DateTime<Utc>>,
    /// The next timer (`WorkQueue::claim_timers`).
    pub timer: Option<DateTime<Utc>>,
}

impl NextDue {
    /// Nothing is waiting to be claimed, now or later.
    pub fn is_empty(&self) -> bool {
        self.run.is_none() && self.timer.is_none()
    }
}

/// When an item becomes claimable: when due, or when its lease ends.
const CLAIMABLE_AT: &str = "CASE WHEN lease_expires_at IS NULL THEN due_at ELSE lease_expires_at END";

// The statements `queries/work.rs` runs, named for what they do.
pub(super) const NEXT_DUE: &str = concatcp!(
    "SELECT MIN(CASE WHEN kind = 'run' THEN ",
    CLAIMABLE_AT,
    " END), MIN(CASE WHEN kind <> 'run' THEN ",
    CLAIMABLE_AT,
    " END) FROM work WHERE queue IS NULL"
);
pub(super) const EXTEND_LEASE: &str =
    "UPDATE work SET lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3 AND lease_epoch = $4";
pub(super) const WORK_ITEM: &str = concatcp!("SELECT ", WORK_COLUMNS, " FROM work WHERE id = $1");
pub(super) const DEFER_UNBEGUN: &str = "UPDATE work SET lease_owner = NULL, lease_expires_at = NULL, \
     lease_epoch = 0, due_at = $1 WHERE id = $2 AND lease_owner = $3 AND lease_epoch = $4 AND lease_epoch = 1";
pub(super) const RELEASE_LEASES: &str =
    "UPDATE work SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1";
