//! `limits.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::Store;
use crate::store::backend::Backend;
use crate::store::limits::{
    limit_scope, LimitAnswer, LimitHolder, LimitRequest, LimitRow, LimitUse, LimitWait, Permit, AHEAD_OF, ANY_WAITING,
    DELETE_HOLD, DELETE_HOLDS, DELETE_LIMIT, EXISTING_LIMITS, GET_LIMIT, INSERT_LIMIT, INSERT_MARK, IN_USE,
    LIST_LIMITS, PAUSE_LIMIT, PLACES_BY_LIMIT, PLACES_OF_LIMIT, PRUNE_HOLDS, UPDATE_LIMIT, UPSERT_HOLD, WAITING_SINCE,
    WAIT_OF, WAKE_ALL,
};
use crate::store::phases::PHASES;
use crate::store::windows::PRUNE_KEY;
use crate::store::{retry_transient, Result};
use chrono::{DateTime, SubsecRound, Utc};
use std::collections::{BTreeSet, HashMap};
use uuid::Uuid;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

/// How long a waiter for a full concurrency waits before it looks again, when no place it
/// could be woken by frees first (a place held by a process that died frees without a word).
const LOOK_AGAIN: chrono::Duration = chrono::Duration::milliseconds(1000);
/// Names one `existing_limits` statement asks about (far below either database's bind limit).
const NAMES_PER_STATEMENT: usize = 500;
const LOCK_LIMIT: &str = const_format::concatcp!(
    "SELECT name, concurrency, rate_limit, rate_period_ms, paused_until, created_at, updated_at \
     FROM shared_limits WHERE name = $1",
    <Store as Backend>::LOCK_ROW
);

impl Store {
    /// The live places, held and waiting, of each of `rows` by name (one holding none is
    /// absent): one limit's through its index, several limits' all in one statement.
    async fn places_by_limit(tx: &mut Tx<'_>, rows: &[LimitRow]) -> Result<HashMap<String, (i64, i64)>> {
        let read: Vec<(String, i64, i64)> = match rows {
            [] => Vec::new(),
            [one] => sqlx::query_as(PLACES_OF_LIMIT).bind(&one.name).fetch_all(&mut **tx).await?,
            _ => sqlx::query_as(PLACES_BY_LIMIT).fetch_all(&mut **tx).await?,
        };
        Ok(read.into_iter().map(|(name, holding, waiting)| (name, (holding, waiting))).collect())
    }

    /// When `row` (locked) next has a place for one more, or `None`: now.
    pub(super) async fn limit_refusal(
        tx: &mut Tx<'_>,
        row: &LimitRow,
        holder: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>> {
        if let Some(until) = row.paused_until.filter(|until| *until > now) {
            return Ok(Some(until));
        }
        if let Some(concurrency) = row.concurrency {
            let (in_use,): (i64,) = sqlx::query_as(IN_USE).bind(&row.name).bind(holder).fetch_one(&mut **tx).await?;
            PHASES.statement();
            if in_use >= i64::from(concurrency) {
                return Ok(Some(now + LOOK_AGAIN));
            }
        }
        let Some(window) = row.guarded_window() else { return Ok(None) };
        let scope = limit_scope(&row.name);
        let (used, _) = Self::window_use(&mut **tx, &scope, "", window, now).await?;
        let (anyone_waiting,): (bool,) = sqlx::query_as(ANY_WAITING).bind(&row.name).fetch_one(&mut **tx).await?;
        PHASES.statement();
        if used < i64::from(window.limit) && !anyone_waiting {
            return Ok(None);
        }
        // Waiters take their turns in the window in the order they began waiting.
        let since: Option<DateTime<Utc>> =
            sqlx::query_scalar(WAITING_SINCE).bind(holder).fetch_optional(&mut **tx).await?;
        let (behind,): (i64,) =
            sqlx::query_as(AHEAD_OF).bind(&row.name).bind(since.unwrap_or(now)).fetch_one(&mut **tx).await?;
        PHASES.statement();
        let refused = Self::window_refusal(tx, &scope, "", window, now, behind).await?;
        if refused.is_some() {
            sqlx::query(PRUNE_KEY).bind(&scope).bind("").bind(window.since(now)).execute(&mut **tx).await?;
        }
        Ok(refused)
    }

    pub(super) async fn hold(
        tx: &mut Tx<'_>,
        at: &LimitHolder,
        state: &str,
        now: DateTime<Utc>,
        until: Option<DateTime<Utc>>,
    ) -> Result<()> {
        sqlx::query(UPSERT_HOLD)
            .bind(&at.holder)
            .bind(&at.limit)
            .bind(at.instance_id)
            .bind(&at.node_id)
            .bind(at.attempt)
            .bind(state)
            .bind(at.work_id)
            .bind(now)
            .bind(until)
            .execute(&mut **tx)
            .await?;
        PHASES.statement();
        Ok(())
    }

    /// `at`'s answer under `row` (locked in `tx`; `None`: no limit has its name), written in `tx`.
    pub(super) async fn acquire_in(
        tx: &mut Tx<'_>,
        row: Option<&LimitRow>,
        at: &LimitHolder,
        now: DateTime<Utc>,
    ) -> Result<Permit> {
        let Some(row) = row else {
            sqlx::query(DELETE_HOLD).bind(&at.holder).execute(&mut **tx).await?;
            return Ok(Permit::Missing);
        };
        if let Some(until) = Self::limit_refusal(tx, row, &at.holder, now).await? {
            Self::hold(tx, at, "waiting", now, Some(until)).await?;
            return Ok(Permit::Wait { until });
        }
        // Only a concurrency counts places; a rate counts its marks.
        let holding = row.concurrency.is_some();
        if holding {
            Self::hold(tx, at, "holding", now, None).await?;
        } else {
            sqlx::query(DELETE_HOLD).bind(&at.holder).execute(&mut **tx).await?;
        }
        if row.window().is_some() {
            let mark = sqlx::query(INSERT_MARK).bind(limit_scope(&row.name)).bind("").bind(now);
            mark.execute(&mut **tx).await?;
            PHASES.statement();
        }
        Ok(Permit::Granted { holding })
    }

    /// Limit `name`'s row, locked for the rest of `tx`.
    pub(super) async fn lock_limit(tx: &mut Tx<'_>, name: &str) -> Result<Option<LimitRow>> {
        let row = sqlx::query_as(LOCK_LIMIT).bind(name).fetch_optional(&mut **tx).await?;
        PHASES.statement();
        Ok(row)
    }

    async fn delete_limit_once(&self, name: &str, now: DateTime<Utc>) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query(DELETE_LIMIT).bind(name).execute(&mut *tx).await?;
        sqlx::query(WAKE_ALL).bind(name).bind(now).execute(&mut *tx).await?;
        sqlx::query(DELETE_HOLDS).bind(name).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn limits_with_use(&self, rows: Vec<LimitRow>, now: DateTime<Utc>) -> Result<Vec<(LimitRow, LimitUse)>> {
        // The places of every limit asked about in one statement; only a rate's window is read per limit.
        let mut tx = self.pool().begin().await?;
        let places = Self::places_by_limit(&mut tx, &rows).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let (in_use, waiting) = places.get(&row.name).copied().unwrap_or_default();
            let rate_used = match row.window() {
                Some(window) => Self::window_use(&mut *tx, &limit_scope(&row.name), "", window, now).await?.0,
                None => 0,
            };
            out.push((row, LimitUse { in_use, waiting, rate_used }));
        }
        tx.commit().await?;
        Ok(out)
    }
}

#[async_trait::async_trait]
impl crate::store::LimitStore for Store {
    async fn insert_limit(&self, row: &LimitRow) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(INSERT_LIMIT)
            .bind(&row.name)
            .bind(row.concurrency)
            .bind(row.rate_limit)
            .bind(row.rate_period_ms)
            .bind(row.created_at)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn update_limit(&self, row: &LimitRow) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(UPDATE_LIMIT)
            .bind(&row.name)
            .bind(row.concurrency)
            .bind(row.rate_limit)
            .bind(row.rate_period_ms)
            .bind(row.updated_at)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn delete_limit(&self, name: &str, now: DateTime<Utc>) -> Result<bool> {
        retry_transient(|| self.delete_limit_once(name, now)).await
    }

    async fn list_limits(&self, now: DateTime<Utc>) -> Result<Vec<(LimitRow, LimitUse)>> {
        let rows: Vec<LimitRow> = sqlx::query_as(LIST_LIMITS).fetch_all(self.pool()).await?;
        self.limits_with_use(rows, now).await
    }

    async fn get_limit(&self, name: &str, now: DateTime<Utc>) -> Result<Option<(LimitRow, LimitUse)>> {
        let row: Option<LimitRow> = sqlx::query_as(GET_LIMIT).bind(name).fetch_optional(self.pool()).await?;
        Ok(self.limits_with_use(row.into_iter().collect(), now).await?.pop())
    }

    async fn existing_limits(&self, names: &[String]) -> Result<Vec<String>> {
        // Only the names asked about (a publish checks a few against however many there are),
        // each once, a bounded number per statement: a definition may name one on every node.
        let asked: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let asked: Vec<&str> = asked.into_iter().collect();
        let mut found = Vec::new();
        for chunk in asked.chunks(NAMES_PER_STATEMENT) {
            let mut sql = sqlx::QueryBuilder::<Db>::new(EXISTING_LIMITS);
            super::push_binds(&mut sql, chunk.iter().copied());
            sql.push(")");
            let rows: Vec<(String,)> = sql.build_query_as().keep_built().fetch_all(self.pool()).await?;
            found.extend(rows.into_iter().map(|(name,)| name));
        }
        Ok(found)
    }

    async fn limit_requests(&self, requests: &[LimitRequest]) -> Result<Vec<LimitAnswer>> {
        retry_transient(|| self.limit_requests_once(requests)).await
    }

    async fn pause_limit(&self, name: &str, until: DateTime<Utc>) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(PAUSE_LIMIT).bind(name).bind(until.trunc_subsecs(6)).execute(self.pool()).await?;
        Ok(())
    }

    async fn limit_wait(&self, instance: Uuid) -> Result<Option<LimitWait>> {
        let row: Option<(String, String, Option<DateTime<Utc>>, DateTime<Utc>)> =
            sqlx::query_as(WAIT_OF).bind(instance).fetch_optional(self.pool()).await?;
        let Some((limit, node_id, until, since)) = row else { return Ok(None) };
        let (ahead,): (i64,) = sqlx::query_as(AHEAD_OF).bind(&limit).bind(since).fetch_one(self.pool()).await?;
        Ok(Some(LimitWait { limit, node_id, until, ahead }))
    }

    async fn prune_limit_holds(&self) -> Result<u64> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query(PRUNE_HOLDS).execute(self.pool()).await?.rows_affected())
    }
}
