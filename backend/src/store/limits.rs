//! Shared limits as stored (`shared_limits`, `limit_holds`; the SQL body in `queries/limits.rs`).
//! A node attempt naming a limit asks for a place before it runs (`LimitStore::limit_requests`),
//! under the limit's row lock: it is let through while the limit is not paused, its holding
//! places (each counted while its attempt is its node's current running one, so a process
//! killed mid-call frees its places once the attempt is judged lost) are under `concurrency`,
//! and its `rate` window (`rate_marks` of scope `limit:<name>`) has room. Refused, it records
//! that it waits and until when, and its work item is deferred without counting an attempt.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct LimitRow {
    pub name: String,
    pub concurrency: Option<i32>,
    pub rate_limit: Option<i32>,
    pub rate_period_ms: Option<i64>,
    pub paused_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl LimitRow {
    /// Its rate's window as a place is judged by: a little longer than the rate's period
    /// (1/40 of it, at most 50 ms), so the calls let through reach the API within the rate
    /// even when one set off a few milliseconds later than the place was counted.
    pub fn guarded_window(&self) -> Option<super::TimeWindow> {
        self.window().map(|w| super::TimeWindow { period_ms: w.period_ms + (w.period_ms / 40).min(50), ..w })
    }

    /// Its rate as a window, if it has one.
    pub fn window(&self) -> Option<super::TimeWindow> {
        match (self.rate_limit, self.rate_period_ms) {
            (Some(limit), Some(period)) if limit > 0 && period > 0 => {
                Some(super::TimeWindow { limit: limit as u32, period_ms: period as u64 })
            }
            _ => None,
        }
    }
}

/// What a limit holds now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitUse {
    pub in_use: i64,
    pub waiting: i64,
    pub rate_used: i64,
}

/// An attempt (or a map's item) asking for a place: `holder` names it uniquely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitHolder {
    pub holder: String,
    pub limit: String,
    pub instance_id: Uuid,
    pub node_id: String,
    pub attempt: i32,
    /// The work item to wake when a place frees (none for a map's item, which waits in its attempt).
    pub work_id: Option<Uuid>,
}

/// The answer to a request for a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    /// Let through; `holding`: it holds a place to give back (the limit has a concurrency).
    Granted { holding: bool },
    /// No limit has that name (deleted since the version was published): run unlimited.
    Missing,
    /// Ask again at `until` (or sooner, when a place frees).
    Wait { until: DateTime<Utc> },
}

/// One request of a batch written in one transaction (`LimitStore::limit_requests`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitRequest {
    /// A place for this holder, or when to ask again.
    Acquire(LimitHolder),
    /// Gives this holder's place under `limit` back.
    Release { holder: String, limit: String },
}

impl LimitRequest {
    pub fn limit(&self) -> &str {
        match self {
            Self::Acquire(holder) => &holder.limit,
            Self::Release { limit, .. } => limit,
        }
    }
}

/// The answer to one `LimitRequest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitAnswer {
    Permit(Permit),
    /// Given back; whether an attempt waiting for the limit was woken.
    Released {
        woke: bool,
    },
}

/// A node of an instance waiting for a shared limit, for `held_by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitWait {
    pub limit: String,
    pub node_id: String,
    pub until: Option<DateTime<Utc>>,
    /// Attempts waiting for the limit since before this one.
    pub ahead: i64,
}

#[async_trait]
pub trait LimitStore: Send + Sync + 'static {
    /// `false`: a limit of that name exists.
    async fn insert_limit(&self, row: &LimitRow) -> Result<bool>;
    /// Sets its concurrency and rate; `false`: no such limit.
    async fn update_limit(&self, row: &LimitRow) -> Result<bool>;
    /// Deletes it and its places; the attempts waiting for it are woken now (and go on
    /// unlimited). `false`: no such limit.
    async fn delete_limit(&self, name: &str, now: DateTime<Utc>) -> Result<bool>;
    async fn list_limits(&self, now: DateTime<Utc>) -> Result<Vec<(LimitRow, LimitUse)>>;
    async fn get_limit(&self, name: &str, now: DateTime<Utc>) -> Result<Option<(LimitRow, LimitUse)>>;
    /// Which of `names` exist.
    async fn existing_limits(&self, names: &[String]) -> Result<Vec<String>>;
    /// Places asked for and given back, of any limits, in one transaction (each limit's row
    /// locked once, in name order), answered in the order asked. An acquire gets a place or
    /// when to ask again; a release gives its holder's place back and wakes the attempts that
    /// have waited longest for the limit, one per place.
    async fn limit_requests(&self, requests: &[LimitRequest]) -> Result<Vec<LimitAnswer>>;
    /// Nothing under the limit begins before `until` (a later pause stands).
    async fn pause_limit(&self, name: &str, until: DateTime<Utc>) -> Result<()>;
    /// The node of `instance` waiting for a shared limit, if one is.
    async fn limit_wait(&self, instance: Uuid) -> Result<Option<LimitWait>>;
    /// Deletes the places no attempt holds or waits with any more (their attempt ended
    /// without giving them back: a `task` or `subworkflow` node's, a killed process's); how many.
    async fn prune_limit_holds(&self) -> Result<u64>;
}

/// The window scope of a limit's rate in `rate_marks`.
pub fn limit_scope(name: &str) -> String {
    format!("limit:{name}")
}

pub(super) const COLUMNS: &str = "name, concurrency, rate_limit, rate_period_ms, paused_until, created_at, updated_at";
pub(super) const INSERT_LIMIT: &str = const_format::concatcp!(
    "INSERT INTO shared_limits (",
    COLUMNS,
    ") VALUES ($1, $2, $3, $4, NULL, $5, $5) ON CONFLICT (name) DO NOTHING"
);
pub(super) const UPDATE_LIMIT: &str =
    "UPDATE shared_limits SET concurrency = $2, rate_limit = $3, rate_period_ms = $4, updated_at = $5 WHERE name = $1";
pub(super) const DELETE_LIMIT: &str = "DELETE FROM shared_limits WHERE name = $1";
pub(super) const LIST_LIMITS: &str = const_format::concatcp!("SELECT ", COLUMNS, " FROM shared_limits ORDER BY name");
/// Followed by the names asked about and `)`.
pub(super) const EXISTING_LIMITS: &str = "SELECT name FROM shared_limits WHERE name IN (";
pub(super) const GET_LIMIT: &str = const_format::concatcp!("SELECT ", COLUMNS, " FROM shared_limits WHERE name = $1");
pub(super) const PAUSE_LIMIT: &str = "UPDATE shared_limits SET paused_until = $2 \
     WHERE name = $1 AND (paused_until IS NULL OR paused_until < $2)";
/// A place (`h`) whose attempt is still its node's current one, running or waiting on its
/// worker or child (not on a retry's backoff: that attempt has ended): it counts.
macro_rules! live {
    () => {
        "EXISTS (SELECT 1 FROM instance_nodes n WHERE n.instance_id = h.instance_id AND n.node_id = h.node_id \
         AND n.attempts = h.attempt AND (n.status = 'running' \
         OR (n.status = 'waiting' AND n.wait_kind IN ('task', 'child'))))"
    };
}
/// Places of limit `$1` held by attempts that are still their node's running one, but `$2`'s.
pub(super) const IN_USE: &str = concat!(
    "SELECT COUNT(*) FROM limit_holds h WHERE h.limit_name = $1 AND h.state = 'holding' AND h.holder <> $2 AND ",
    live!()
);
/// Counts a limit's live places held and waiting (`GET /limits` shows them of each).
macro_rules! places {
    ($only:literal) => {
        concat!(
            "SELECT h.limit_name, SUM(CASE WHEN h.state = 'holding' THEN 1 ELSE 0 END), \
             SUM(CASE WHEN h.state = 'waiting' THEN 1 ELSE 0 END) FROM limit_holds h WHERE ",
            $only,
            live!(),
            " GROUP BY h.limit_name"
        )
    };
}
/// Every limit's places, in one statement.
pub(super) const PLACES_BY_LIMIT: &str = places!("");
/// Limit `$1`'s places (through its index: one limit's rows only).
pub(super) const PLACES_OF_LIMIT: &str = places!("h.limit_name = $1 AND ");
pub(super) const UPSERT_HOLD: &str =
    const_format::concatcp!(INSERT_HOLDS, "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", HOLDS_CONFLICT);
pub(super) const DELETE_HOLD: &str = "DELETE FROM limit_holds WHERE holder = $1";
pub(super) const DELETE_HOLDS: &str = "DELETE FROM limit_holds WHERE limit_name = $1";
/// Wakes the deferred work items of the `$3` attempts that have waited longest for limit `$1`.
pub(super) const WAKE_OLDEST: &str = concat!(
    "UPDATE work SET due_at = $2 WHERE id IN (SELECT h.work_id FROM limit_holds h WHERE h.limit_name = $1 \
     AND h.state = 'waiting' AND h.work_id IS NOT NULL AND ",
    live!(),
    " ORDER BY h.since LIMIT $3) AND lease_owner IS NULL AND due_at > $2"
);
/// Followed by the holders given back and `)`.
pub(super) const DELETE_HOLDS_OF: &str = "DELETE FROM limit_holds WHERE holder IN (";
/// Followed by the rows; the same conflict rule as `UPSERT_HOLD`.
pub(super) const INSERT_HOLDS: &str =
    "INSERT INTO limit_holds (holder, limit_name, instance_id, node_id, attempt, state, work_id, since, until) ";
pub(super) const HOLDS_CONFLICT: &str = " ON CONFLICT (holder) DO UPDATE SET \
     state = excluded.state, work_id = excluded.work_id, until = excluded.until, \
     since = CASE WHEN limit_holds.state = excluded.state THEN limit_holds.since ELSE excluded.since END";
/// Wakes every deferred work item waiting for limit `$1`.
pub(super) const WAKE_ALL: &str = "UPDATE work SET due_at = $2 WHERE id IN (SELECT work_id FROM limit_holds \
     WHERE limit_name = $1 AND state = 'waiting' AND work_id IS NOT NULL) AND lease_owner IS NULL AND due_at > $2";
pub(super) const WAIT_OF: &str = concat!(
    "SELECT h.limit_name, h.node_id, h.until, h.since FROM limit_holds h \
     WHERE h.instance_id = $1 AND h.state = 'waiting' AND ",
    live!(),
    " ORDER BY h.since LIMIT 1"
);
pub(super) const ANY_WAITING: &str = concat!(
    "SELECT EXISTS (SELECT 1 FROM limit_holds h WHERE h.limit_name = $1 AND h.state = 'waiting' AND ",
    live!(),
    ")"
);
/// One attempt begun under a rate (its stale marks are pruned when the window is found full,
/// and by the retention sweep).
pub(super) const INSERT_MARK: &str = "INSERT INTO rate_marks (scope, key, at) VALUES ($1, $2, $3)";
pub(super) const WAITING_SINCE: &str = "SELECT since FROM limit_holds WHERE holder = $1 AND state = 'waiting'";
pub(super) const AHEAD_OF: &str = concat!(
    "SELECT COUNT(*) FROM limit_holds h WHERE h.limit_name = $1 AND h.state = 'waiting' AND h.since < $2 AND ",
    live!()
);
/// Places whose attempt is no longer its node's current one.
pub(super) const PRUNE_HOLDS: &str =
    concat!("DELETE FROM limit_holds WHERE holder IN (SELECT h.holder FROM limit_holds h WHERE NOT ", live!(), ")");
