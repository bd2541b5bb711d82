//! The durable work queue's SQL (timers, dispatched attempts, tasks), its trait and the
//! column list; the SQL is `shared/work.rs`, one body for both backends. Every claim bumps the
//! item's `lease_epoch`: the fence a transition checks before consuming the item, so the work
//! of an expired lease can never be applied twice.

use super::engine_records::{Fence, WorkItem};
use super::engine_sql::WORK_COLUMNS;
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
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

// The statements `shared/work.rs` runs, named for what they do.
pub(super) const NEXT_DUE: &str =
    "SELECT MIN(CASE WHEN lease_expires_at IS NULL THEN due_at ELSE lease_expires_at END) FROM work \
    WHERE queue IS NULL";
pub(super) const EXTEND_LEASE: &str =
    "UPDATE work SET lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3 AND lease_epoch = $4";
pub(super) const WORK_ITEM: &str = concatcp!("SELECT ", WORK_COLUMNS, " FROM work WHERE id = $1");
pub(super) const RELEASE_LEASES: &str =
    "UPDATE work SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1";
