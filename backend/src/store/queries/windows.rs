//! `windows.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::phases::PHASES;
use crate::store::windows::{
    rate_scope, throttle_scope, RateCheck, ThrottlePlace, TimeWindow, INSERT_MARKS, IN_WINDOW, NTH_IN_WINDOW,
    OLDEST_IN_SCOPE, PRUNE_ALL, PRUNE_KEY, THROTTLE_ADMISSIBLE, THROTTLE_AHEAD, THROTTLE_LINE_WAITING,
};
use crate::store::Result;
use chrono::{DateTime, SubsecRound, Utc};
use uuid::Uuid;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

impl Store {
    /// How many marks `key` has in `scope`'s window ending at `now`, and the oldest of them.
    pub(super) async fn window_use<'c, E: sqlx::Executor<'c, Database = Db>>(
        conn: E,
        scope: &str,
        key: &str,
        window: TimeWindow,
        now: DateTime<Utc>,
    ) -> Result<(i64, Option<DateTime<Utc>>)> {
        let used: (i64, Option<DateTime<Utc>>) =
            sqlx::query_as(IN_WINDOW).bind(scope).bind(key).bind(window.since(now)).fetch_one(conn).await?;
        PHASES.statement();
        Ok(used)
    }

    /// Records starts let through at `at` in `scope`'s windows, one per key in `keys`, and
    /// deletes those keys' marks no window counts any more.
    pub(super) async fn mark_windows(
        tx: &mut Tx<'_>,
        scope: &str,
        keys: &[&str],
        window: TimeWindow,
        at: DateTime<Utc>,
    ) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut distinct: Vec<&str> = keys.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        for key in distinct {
            sqlx::query(PRUNE_KEY).bind(scope).bind(key).bind(window.since(at)).execute(&mut **tx).await?;
            PHASES.statement();
        }
        for chunk in keys.chunks(crate::store::transitions::ROWS_PER_INSERT) {
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_MARKS);
            insert.push_values(chunk, |mut v, key| {
                v.push_bind(scope).push_bind(*key).push_bind(at);
            });
            insert.build().execute(&mut **tx).await?;
            PHASES.statement();
        }
        Ok(())
    }

    /// The workflow's `rate_limit` for a start: `Some(when)` refuses it (its key's window is
    /// full until `when`). Takes the workflow's lock; a start it lets through is then counted
    /// by `mark_rate` once nothing else refuses it.
    pub(super) async fn rate_refusal(
        tx: &mut Tx<'_>,
        workflow: Uuid,
        check: &RateCheck,
    ) -> Result<Option<DateTime<Utc>>> {
        Self::lock_workflow(tx, workflow).await?;
        let now = Utc::now().trunc_subsecs(6);
        Self::window_refusal(tx, &rate_scope(workflow), &check.key, check.window, now, 0).await
    }

    /// `Some(when)` if `key`'s window in `scope` is full at `now` for one more after `behind`
    /// others that wait for it first: when its turn in the window comes. Call holding the lock
    /// of what owns the window.
    pub(super) async fn window_refusal(
        tx: &mut Tx<'_>,
        scope: &str,
        key: &str,
        window: TimeWindow,
        now: DateTime<Utc>,
        behind: i64,
    ) -> Result<Option<DateTime<Utc>>> {
        let (used, _) = Self::window_use(&mut **tx, scope, key, window, now).await?;
        let limit = i64::from(window.limit);
        if used + behind < limit {
            return Ok(None);
        }
        // Room comes when enough marks have left for the count to drop below the limit (more
        // than one when the limit was lowered since they were made); with others waiting
        // first, when as many more have left. Each round of the window lets `limit` through
        // (not the marks there are now: a window holding few marks would put a deep line of
        // waiters rounds too far back), so waiters wake spread over their turns, not all at once.
        let turn = used + behind - limit;
        let rounds = turn / limit;
        let freeing: Option<DateTime<Utc>> = sqlx::query_scalar(NTH_IN_WINDOW)
            .bind(scope)
            .bind(key)
            .bind(window.since(now))
            .bind(turn % limit)
            .fetch_optional(&mut **tx)
            .await?;
        PHASES.statement();
        let later = chrono::Duration::milliseconds((window.period_ms as i64).saturating_mul(rounds));
        Ok(Some(window.expiry(freeing.unwrap_or(now)) + later))
    }

    /// Counts a start the rate limit let through (`rate_refusal` took the lock).
    pub(super) async fn mark_rate(tx: &mut Tx<'_>, workflow: Uuid, check: &RateCheck) -> Result<()> {
        let now = Utc::now().trunc_subsecs(6);
        Self::mark_windows(tx, &rate_scope(workflow), &[check.key.as_str()], check.window, now).await
    }

    /// Whether the throttle holds back `asking` (a start or retry all other limits let run):
    /// its key's window is full, or an instance with its key waits ahead of it. Call holding
    /// the workflow's lock.
    pub(super) async fn throttled(
        tx: &mut Tx<'_>,
        workflow: Uuid,
        window: TimeWindow,
        key: &str,
        asking: Uuid,
    ) -> Result<bool> {
        let (waiting,): (bool,) =
            sqlx::query_as(THROTTLE_LINE_WAITING).bind(workflow).bind(key).bind(asking).fetch_one(&mut **tx).await?;
        PHASES.statement();
        if waiting {
            return Ok(true);
        }
        let now = Utc::now().trunc_subsecs(6);
        let (used, _) = Self::window_use(&mut **tx, &throttle_scope(workflow), key, window, now).await?;
        Ok(used >= i64::from(window.limit))
    }

    /// Counts an admission at `at` in the workflow's throttle windows (each admitted
    /// instance's key).
    pub(super) async fn mark_throttle(
        tx: &mut Tx<'_>,
        workflow: Uuid,
        window: TimeWindow,
        keys: &[&str],
        at: DateTime<Utc>,
    ) -> Result<()> {
        Self::mark_windows(tx, &throttle_scope(workflow), keys, window, at).await
    }

    /// The queued instances of `workflow` the throttle's windows have room for now, with
    /// their keys, in admission's order (at most 1,000).
    pub(super) async fn throttle_admissible(
        tx: &mut Tx<'_>,
        workflow: Uuid,
        window: TimeWindow,
    ) -> Result<Vec<(Uuid, String)>> {
        let now = Utc::now().trunc_subsecs(6);
        let rows = sqlx::query_as(THROTTLE_ADMISSIBLE)
            .bind(workflow)
            .bind(i64::from(window.limit))
            .bind(throttle_scope(workflow))
            .bind(window.since(now))
            .fetch_all(&mut **tx)
            .await?;
        PHASES.statement();
        Ok(rows)
    }
}

#[async_trait::async_trait]
impl crate::store::FlowWindows for Store {
    async fn throttle_place(&self, workflow: Uuid, key: &str, id: Uuid, window: TimeWindow) -> Result<ThrottlePlace> {
        let (ahead,): (i64,) =
            sqlx::query_as(THROTTLE_AHEAD).bind(workflow).bind(key).bind(id).fetch_one(self.pool()).await?;
        let now = Utc::now().trunc_subsecs(6);
        let (in_window, oldest) = Self::window_use(self.pool(), &throttle_scope(workflow), key, window, now).await?;
        let opens_at = (in_window >= i64::from(window.limit)).then(|| window.expiry(oldest.unwrap_or(now)));
        Ok(ThrottlePlace { ahead, in_window, opens_at })
    }

    async fn next_throttle_opening(&self, workflow: Uuid, window: TimeWindow) -> Result<Option<DateTime<Utc>>> {
        let now = Utc::now().trunc_subsecs(6);
        let (oldest,): (Option<DateTime<Utc>>,) = sqlx::query_as(OLDEST_IN_SCOPE)
            .bind(throttle_scope(workflow))
            .bind(window.since(now))
            .bind(workflow)
            .fetch_one(self.pool())
            .await?;
        Ok(oldest.map(|at| window.expiry(at)))
    }

    async fn prune_windows(&self, before: DateTime<Utc>) -> Result<u64> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query(PRUNE_ALL).bind(before).execute(self.pool()).await?.rows_affected())
    }
}
