//! Shared limits' requests in batches (`LimitStore::limit_requests`): the acquires and
//! releases that arrive together share one transaction, each limit's row locked once. When a
//! limit has room for every acquire of the batch — not paused, its places and its rate's
//! window with room for all, no one waiting — they are granted at once with one write per
//! table; otherwise each is judged in turn (`acquire_in`), inside the
//! same transaction, so a batch never answers what one-by-one would not. A lone request is a
//! batch of one.

use super::Store;
use crate::store::backend::Backend;
use crate::store::limits::{
    limit_scope, LimitAnswer, LimitHolder, LimitRequest, LimitRow, Permit, ANY_WAITING, DELETE_HOLDS_OF,
    HOLDS_CONFLICT, INSERT_HOLDS, IN_USE, WAKE_OLDEST,
};
use crate::store::phases::PHASES;
use crate::store::transitions::ROWS_PER_INSERT;
use crate::store::Result;
use chrono::{DateTime, SubsecRound, Utc};
use std::collections::BTreeMap;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

impl Store {
    pub(super) async fn limit_requests_once(&self, requests: &[LimitRequest]) -> Result<Vec<LimitAnswer>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // In name order, so two processes' batches lock the limits they share alike.
        let mut by_limit: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, request) in requests.iter().enumerate() {
            by_limit.entry(request.limit()).or_default().push(i);
        }
        let mut answers = vec![None; requests.len()];
        for (limit, asked) in by_limit {
            let group: Vec<(usize, &LimitRequest)> = asked.into_iter().map(|i| (i, &requests[i])).collect();
            for (i, answer) in Self::limit_group(&mut tx, limit, &group).await? {
                answers[i] = Some(answer);
            }
        }
        tx.commit().await?;
        Ok(answers.into_iter().map(|a| a.expect("every request of the batch is answered")).collect())
    }

    /// One limit's requests: its row locked (when any asks for a place), its releases, then
    /// its acquires, then the waiters the released places wake.
    async fn limit_group(
        tx: &mut Tx<'_>,
        limit: &str,
        group: &[(usize, &LimitRequest)],
    ) -> Result<Vec<(usize, LimitAnswer)>> {
        let released: Vec<(usize, &str)> = group
            .iter()
            .filter_map(|(i, r)| match r {
                LimitRequest::Release { holder, .. } => Some((*i, holder.as_str())),
                LimitRequest::Acquire(_) => None,
            })
            .collect();
        let acquires: Vec<(usize, &LimitHolder)> = group
            .iter()
            .filter_map(|(i, r)| match r {
                LimitRequest::Acquire(holder) => Some((*i, holder)),
                LimitRequest::Release { .. } => None,
            })
            .collect();
        // The limit's row first, as deleting a limit takes it before its places.
        let row = match acquires.is_empty() {
            true => None,
            false => Self::lock_limit(tx, limit).await?,
        };
        Self::delete_holds(tx, released.iter().map(|r| r.1)).await?;
        let mut answers = Vec::with_capacity(group.len());
        if !acquires.is_empty() {
            // Read once the lock is held: another batch's marks may have waited it out.
            let now = clock();
            let permits = match &row {
                Some(row) if Self::room_for_all(tx, row, acquires.len(), now).await? => {
                    Self::grant_all(tx, row, &acquires, now).await?
                }
                row => {
                    let mut permits = Vec::with_capacity(acquires.len());
                    let mut at = now;
                    for (_, holder) in &acquires {
                        permits.push(Self::acquire_in(tx, row.as_ref(), holder, at).await?);
                        // The time goes on while each is judged, and strictly: the batch's
                        // waiters take distinct places in line (`AHEAD_OF` counts who began
                        // waiting before), and a mark is never older than its call. With one
                        // time for all, each waiter would see no one ahead and all would wake
                        // at the same opening of the window, all but its first few to be put
                        // back again.
                        at = clock().max(at + chrono::Duration::microseconds(1));
                    }
                    permits
                }
            };
            answers.extend(acquires.iter().zip(permits).map(|((i, _), p)| (*i, LimitAnswer::Permit(p))));
        }
        if !released.is_empty() {
            let wake = sqlx::query(WAKE_OLDEST).bind(limit).bind(clock()).bind(released.len() as i64);
            let woke = wake.execute(&mut **tx).await?.rows_affected() > 0;
            PHASES.statement();
            answers.extend(released.iter().map(|(i, _)| (*i, LimitAnswer::Released { woke })));
        }
        Ok(answers)
    }

    /// Whether `row` (locked) lets `count` more through now with no one waiting: then no
    /// acquire of the batch needs its own look.
    async fn room_for_all(tx: &mut Tx<'_>, row: &LimitRow, count: usize, now: DateTime<Utc>) -> Result<bool> {
        let count = count as i64;
        if row.paused_until.is_some_and(|until| until > now) {
            return Ok(false);
        }
        if let Some(concurrency) = row.concurrency {
            // Every live place, a batch's own included (one asking again): a bound from above.
            let (in_use,): (i64,) = sqlx::query_as(IN_USE).bind(&row.name).bind("").fetch_one(&mut **tx).await?;
            PHASES.statement();
            if in_use + count > i64::from(concurrency) {
                return Ok(false);
            }
        }
        let Some(window) = row.guarded_window() else { return Ok(true) };
        let (used, _) = Self::window_use(&mut **tx, &limit_scope(&row.name), "", window, now).await?;
        if used + count > i64::from(window.limit) {
            return Ok(false);
        }
        let (anyone_waiting,): (bool,) = sqlx::query_as(ANY_WAITING).bind(&row.name).fetch_one(&mut **tx).await?;
        PHASES.statement();
        Ok(!anyone_waiting)
    }

    /// Lets every one of `acquires` through `row`: their places (a concurrency's) in one
    /// statement, their rate's marks in one.
    async fn grant_all(
        tx: &mut Tx<'_>,
        row: &LimitRow,
        acquires: &[(usize, &LimitHolder)],
        now: DateTime<Utc>,
    ) -> Result<Vec<Permit>> {
        let holding = row.concurrency.is_some();
        if holding {
            for chunk in acquires.chunks(ROWS_PER_INSERT) {
                let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_HOLDS);
                insert.push_values(chunk, |mut v, (_, at)| {
                    v.push_bind(&at.holder)
                        .push_bind(&at.limit)
                        .push_bind(at.instance_id)
                        .push_bind(&at.node_id)
                        .push_bind(at.attempt)
                        .push_bind("holding")
                        .push_bind(at.work_id)
                        .push_bind(now)
                        .push_bind(None::<DateTime<Utc>>);
                });
                insert.push(HOLDS_CONFLICT);
                insert.build().execute(&mut **tx).await?;
                PHASES.statement();
            }
        } else {
            // A rate's marks count it; a place it may have waited with goes.
            Self::delete_holds(tx, acquires.iter().map(|(_, at)| at.holder.as_str())).await?;
        }
        // Pruned by the window places are judged by, which reaches a little further back.
        if let Some(window) = row.guarded_window() {
            let marks: Vec<(String, DateTime<Utc>)> = acquires.iter().map(|_| (String::new(), now)).collect();
            Self::write_marks(tx, &limit_scope(&row.name), window, &marks).await?;
        }
        Ok(vec![Permit::Granted { holding }; acquires.len()])
    }

    /// Deletes the places of `holders` (none: nothing is asked).
    async fn delete_holds<'h>(tx: &mut Tx<'_>, holders: impl Iterator<Item = &'h str>) -> Result<()> {
        let holders: Vec<&str> = holders.collect();
        for chunk in holders.chunks(ROWS_PER_INSERT) {
            let mut sql = sqlx::QueryBuilder::<Db>::new(DELETE_HOLDS_OF);
            super::push_binds(&mut sql, chunk.iter().copied());
            sql.push(")");
            sql.build().execute(&mut **tx).await?;
            PHASES.statement();
        }
        Ok(())
    }
}

/// Now, to the microsecond both databases keep.
fn clock() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}
