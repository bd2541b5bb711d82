//! Windows over time (`rate_marks`; statements here, their use in `queries/windows.rs`): the
//! workflow settings `throttle` (queued starts wait for room) and `rate_limit` (starts past it
//! are refused). A window holds one row per start it let through, kept for the window's
//! length; a start (or an admission) counts the rows of its key newer than `now - period`
//! holding the workflow's lock, so every span of `period_ms` stays within `limit` across
//! processes, and a restart forgets nothing. Rows older than the window are deleted as their
//! key is marked again, and by the retention sweep.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// `limit` starts per `period_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindow {
    pub limit: u32,
    pub period_ms: u64,
}

impl TimeWindow {
    /// The start of the window that ends at `now`: marks after it count.
    pub fn since(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - chrono::Duration::milliseconds(self.period_ms.min(i64::MAX as u64) as i64)
    }

    /// When a mark made at `at` leaves the window.
    pub fn expiry(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        at + chrono::Duration::milliseconds(self.period_ms.min(i64::MAX as u64) as i64)
    }
}

/// Which windows a workflow's starts are counted in.
pub fn throttle_scope(workflow: Uuid) -> String {
    format!("throttle:{workflow}")
}

pub fn rate_scope(workflow: Uuid) -> String {
    format!("rate:{workflow}")
}

/// A start the workflow's `rate_limit` counts: its window and its key's value ('' without a key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateCheck {
    pub window: TimeWindow,
    pub key: String,
}

/// Where a throttled instance stands: instances of its key queued before it, and when its
/// key's window next has room (`None`: it has room now).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottlePlace {
    pub ahead: i64,
    pub in_window: i64,
    pub opens_at: Option<DateTime<Utc>>,
}

// The statements `queries/windows.rs` runs, named for what they do.
/// How many marks of scope `$1`, key `$2` are newer than `$3`, and the oldest of them.
pub(super) const IN_WINDOW: &str = "SELECT COUNT(*), MIN(at) FROM rate_marks WHERE scope = $1 AND key = $2 AND at > $3";
/// The time of the mark of scope `$1`, key `$2` newer than `$3` with `$4` older ones before it.
pub(super) const NTH_IN_WINDOW: &str =
    "SELECT at FROM rate_marks WHERE scope = $1 AND key = $2 AND at > $3 ORDER BY at LIMIT 1 OFFSET $4";
/// Marks of scope `$1`, key `$2` that no window counts any more (not newer than `$3`).
pub(super) const PRUNE_KEY: &str = "DELETE FROM rate_marks WHERE scope = $1 AND key = $2 AND at <= $3";
/// Marks no window of any length counts any more (the retention sweep).
pub(super) const PRUNE_ALL: &str = "DELETE FROM rate_marks WHERE at < $1";
pub(super) const INSERT_MARKS: &str = "INSERT INTO rate_marks (scope, key, at) ";
/// The oldest mark of scope `$1` newer than `$2` (it leaves its window first: the next
/// moment a full key may have room), while workflow `$3` has instances queued.
pub(super) const OLDEST_IN_SCOPE: &str = "SELECT MIN(at) FROM rate_marks WHERE scope = $1 AND at > $2 \
     AND EXISTS (SELECT 1 FROM instances WHERE workflow_id = $3 AND status = 'queued')";
/// Whether an instance of workflow `$1` other than `$3` waits with throttle key `$2`: it is
/// ahead in the key's line.
pub(super) const THROTTLE_LINE_WAITING: &str = "SELECT EXISTS (SELECT 1 FROM instances WHERE workflow_id = $1 \
     AND status = 'queued' AND COALESCE(throttle_key, '') = $2 AND id <> $3)";
/// The queued instances of workflow `$1` each throttle key's window has room for (`$2` the
/// limit, `$3` the scope, `$4` the window's start), in admission's order, with their key: an
/// instance's place in its key's line against the marks its key has in the window (counted
/// once per key).
pub(super) const THROTTLE_ADMISSIBLE: &str = "WITH used AS (SELECT key, COUNT(*) AS n FROM rate_marks \
     WHERE scope = $3 AND at > $4 GROUP BY key) \
     SELECT q.id, q.k FROM (SELECT id, queue_order, COALESCE(throttle_key, '') AS k, \
     ROW_NUMBER() OVER (PARTITION BY COALESCE(throttle_key, '') ORDER BY queue_order, id) AS place \
     FROM instances WHERE workflow_id = $1 AND status = 'queued') q \
     LEFT JOIN used u ON u.key = q.k \
     WHERE q.place <= $2 - COALESCE(u.n, 0) \
     ORDER BY q.queue_order, q.id LIMIT 1000";
/// How many instances of workflow `$1` with throttle key `$2` are ahead of `$3` in admission's order.
pub(super) const THROTTLE_AHEAD: &str = "SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status = 'queued' \
     AND COALESCE(throttle_key, '') = $2 AND (queue_order, id) < (SELECT queue_order, id FROM instances WHERE id = $3)";

/// What the queue inspector, the admission's wake-ups and the retention sweep read of the windows.
#[async_trait::async_trait]
pub trait FlowWindows: Send + Sync + 'static {
    /// Where a queued instance stands in its throttle key's line and window.
    async fn throttle_place(
        &self,
        workflow: Uuid,
        key: &str,
        id: Uuid,
        window: TimeWindow,
    ) -> super::Result<ThrottlePlace>;
    /// When the workflow's throttle windows next have room for a key that is full now
    /// (`None`: no key has marks in its window, or no instance waits).
    async fn next_throttle_opening(&self, workflow: Uuid, window: TimeWindow) -> super::Result<Option<DateTime<Utc>>>;
    /// Deletes marks older than `before` (no window is longer than a day); how many.
    async fn prune_windows(&self, before: DateTime<Utc>) -> super::Result<u64>;
}
