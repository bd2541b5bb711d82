//! When an admission is recorded: a concurrency limit must hold in the history users and
//! auditors read, i.e. the recorded intervals `[started_at, ended_at]` of a limited workflow's
//! instances never overlap more than the limit deep (per key too).
//!
//! An end frees its slot when its transaction commits, and records the clock reading its
//! decision was made at, taken before that commit (inside it, or before it on remembered
//! snapshots). An admission sees the slot free only in a statement after that commit, holding
//! the workflow's lock. So the admission's time must be read after the lock and the slot count,
//! never before: a reading from before can be earlier than the `ended_at` of an instance whose
//! slot it takes. That was the case (issue 47, finding 8): the engine read the clock for a
//! queued instance's admission before asking for the lock, so when two instances ended within
//! a few milliseconds, the first end's admission run, its clock read, waited on the lock while
//! the second end committed, then admitted two instances into both slots with `started_at`
//! earlier than the second `ended_at`: three deep on record. Starts had the same flaw (their
//! time is read when the request is prepared, before the lock, and a start can wait for its
//! batch long enough for instances to end meanwhile), and a retry that had to queue kept its
//! retry's time as `started_at` once admitted (`UPDATE_INSTANCE` kept the first one given).
//!
//! Hence: admissions, retries and limited starts are decided at `admission_time`, read under
//! the lock after the count, and never earlier than an end recorded meanwhile (another
//! process's clock may be ahead of this one's). A limited start, decided by the engine before
//! the lock, is decided again by the store at that time (`NewInstance::on_admit_at`): no start
//! needs deciding again later, nor is refused for it. An admission's `started_at` replaces a
//! queued retry's. (The root span of such a retried run opened at the retry; its end entry
//! gives the admission as its start, as `started_at` does.)

use super::Store;
use crate::store::backend::Backend;
use crate::store::phases::PHASES;
use crate::store::NewInstance;
use crate::store::Result;
use chrono::{DateTime, SubsecRound, Utc};
use const_format::concatcp;
use uuid::Uuid;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

/// The latest end, among the instances of workflow `$1`, recorded after the clock reading `$2`.
/// Normally none: the range of `instances_by_end` it reads holds the ends of the last moments,
/// of any workflow.
const ENDS_AFTER: &str = concatcp!(
    "SELECT MAX(ended_at) FROM ",
    <Store as Backend>::INSTANCES_BY_END,
    " WHERE status IN ",
    crate::store::statuses::TERMINAL,
    " AND ended_at > $2 AND workflow_id = $1"
);

impl Store {
    /// The time to record an admission (a retry, a limited start) of `workflow` at. Call it
    /// holding the workflow's lock, after counting its slots: every end that freed one was
    /// committed before, so its recorded time is not later than this (in microseconds, as stored).
    pub(super) async fn admission_time(tx: &mut Tx<'_>, workflow: Uuid) -> Result<DateTime<Utc>> {
        let now = Utc::now().trunc_subsecs(6);
        let latest = Self::ends_after(tx, workflow, now).await?;
        Ok(latest.map_or(now, |latest| latest.max(now)))
    }

    /// The time a start admitted at once is recorded at: under limits, read as an
    /// admission's (call it as `admission_time`), never before it was created; without, the
    /// time it was decided at (no slot to order).
    pub(super) async fn start_time(tx: &mut Tx<'_>, new: &NewInstance) -> Result<DateTime<Utc>> {
        match new.limits.any() {
            true => Ok(Self::admission_time(tx, new.row.workflow_id).await?.max(new.admits_at)),
            false => Ok(new.admits_at),
        }
    }

    async fn ends_after(tx: &mut Tx<'_>, workflow: Uuid, at: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
        // Planned at each run with its bound time (not prepared and cached): Postgres's generic
        // plan cannot know the range after `at` is small, and picks the workflow's index, reading
        // its every instance (measured 75 ms for 50,000, against 0.08 ms planned per run).
        let (latest,): (Option<DateTime<Utc>>,) =
            sqlx::query_as(ENDS_AFTER).bind(workflow).bind(at).persistent(false).fetch_one(&mut **tx).await?;
        PHASES.statement();
        Ok(latest)
    }
}
