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
//! Hence: admissions and retries are decided at `admission_time`, read under the lock after
//! the count, and never earlier than an end recorded meanwhile (another process's clock may be
//! ahead of this one's); a start decided before the lock is checked by `start_is_stale` and,
//! if its time could overlap an end it needs the slot of, decided again later by the engine;
//! an admission's `started_at` replaces a queued retry's. (The root span of such a retried run
//! opened at the retry; its end entry gives the admission as its start, as `started_at` does.)

use super::Store;
use crate::store::admission_sql::ACTIVE_WITH_KEY;
use crate::store::backend::Backend;
use crate::store::engine_records::AdmissionLimits;
use crate::store::phases::PHASES;
use crate::store::Result;
use chrono::{DateTime, SubsecRound, Utc};
use const_format::concatcp;
use uuid::Uuid;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

/// The instances of workflow `$1` whose end was recorded after the clock reading `$2`: how
/// many, how many of them had concurrency key `$3`, and the latest end. Normally none: the
/// range of `instances_by_end` it reads holds the ends of the last moments, of any workflow.
const ENDS_AFTER: &str = concatcp!(
    "SELECT COUNT(*), COUNT(CASE WHEN concurrency_key = $3 THEN 1 END), MAX(ended_at) FROM ",
    <Store as Backend>::INSTANCES_BY_END,
    " WHERE status IN ",
    crate::store::statuses::TERMINAL,
    " AND ended_at > $2 AND workflow_id = $1"
);

/// Ends recorded after a clock reading: how many, how many with the asked key, the latest.
type EndsAfter = (i64, i64, Option<DateTime<Utc>>);

impl Store {
    /// The time to record an admission (or a retry) of `workflow` at. Call it holding the
    /// workflow's lock, after counting its slots: every end that freed one was committed
    /// before, so its recorded time is not later than this (in microseconds, as stored).
    pub(super) async fn admission_time(tx: &mut Tx<'_>, workflow: Uuid) -> Result<DateTime<Utc>> {
        let now = Utc::now().trunc_subsecs(6);
        let (_, _, latest) = Self::ends_after(tx, workflow, now, None).await?;
        Ok(latest.map_or(now, |latest| latest.max(now)))
    }

    /// Whether a start decided at `at` (its `admits_at`), about to be admitted under `limits`
    /// holding the workflow's lock, would be recorded overlapping ends recorded after `at`
    /// beyond a limit: `Some(latest such end)` if so (it is not to be written as decided).
    /// `taken`: slots this transaction gave to earlier starts not yet written.
    ///
    /// Once admitted it runs alongside every instance holding a slot now and every one that
    /// ended after `at`; within the limits that way, its time overlaps no end it needs. One
    /// statement when nothing ended after `at`, the usual case.
    pub(super) async fn start_is_stale(
        tx: &mut Tx<'_>,
        workflow: Uuid,
        limits: AdmissionLimits,
        key: Option<&str>,
        at: DateTime<Utc>,
        taken: i64,
    ) -> Result<Option<DateTime<Utc>>> {
        let (ends, key_ends, latest) = Self::ends_after(tx, workflow, at, key).await?;
        let Some(latest) = latest else { return Ok(None) };
        let (active, key_active): (i64, i64) =
            sqlx::query_as(ACTIVE_WITH_KEY).bind(workflow).bind(key).fetch_one(&mut **tx).await?;
        PHASES.statement();
        let over_workflow = limits.instances.is_some_and(|limit| active + taken + ends >= i64::from(limit));
        let over_key = key.is_some() && limits.per_key.is_some_and(|limit| key_active + key_ends >= i64::from(limit));
        Ok((over_workflow || over_key).then_some(latest))
    }

    async fn ends_after(tx: &mut Tx<'_>, workflow: Uuid, at: DateTime<Utc>, key: Option<&str>) -> Result<EndsAfter> {
        // Planned at each run with its bound time (not prepared and cached): Postgres's generic
        // plan cannot know the range after `at` is small, and picks the workflow's index, reading
        // its every instance (measured 75 ms for 50,000, against 0.08 ms planned per run).
        let ends: EndsAfter =
            sqlx::query_as(ENDS_AFTER).bind(workflow).bind(at).bind(key).persistent(false).fetch_one(&mut **tx).await?;
        PHASES.statement();
        Ok(ends)
    }
}
