//! Starts written together (`start_batch.rs`) for a workflow with a `throttle` or a
//! `rate_limit`: the group is decided as its starts would be one after another, oldest first
//! (`slots.rs::limits_answer`), but each key's window is counted once and the marks the group
//! makes go in one statement per window, rather than several statements per start while the
//! workflow's lock is held. A start refused by the rate limit creates nothing; one refused by
//! a full slot (`on_limit: reject`) is not counted by the rate limit; the throttle never
//! refuses, and queues a start whose key's window is full or whose key has starts waiting.

use super::Store;
use crate::store::backend::Backend;
use crate::store::phases::PHASES;
use crate::store::slots::{ACTIVE_UP_TO, OTHER_QUEUED};
use crate::store::windows::{INSERT_MARKS, PRUNE_KEY, THROTTLE_LINE_WAITING};
use crate::store::{rate_scope, throttle_scope, Held, NewInstance, Result, StartOutcome, TimeWindow};
use chrono::{DateTime, SubsecRound, Utc};
use std::collections::HashMap;
use uuid::Uuid;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

/// One window's keys as the group goes: starts counted in it so far (stored and new).
#[derive(Default)]
struct Counts {
    used: HashMap<String, i64>,
    /// Throttle keys with a start waiting (stored, or queued earlier in the group).
    waiting: HashMap<String, bool>,
    /// New marks: key and time.
    marks: Vec<(String, DateTime<Utc>)>,
}

impl Store {
    /// Whether a group of starts of one workflow (`group`, indexes into `news`, oldest first)
    /// can be decided here: the same limits for all, no per-key limit (each start's place
    /// depends on its peers' keys: decided alone), no `replace`, one rate window.
    pub(super) fn windows_together(news: &[&NewInstance], group: &[usize]) -> bool {
        let first = news[group[0]];
        let limits = first.limits;
        let window = first.rate.as_ref().map(|r| r.window);
        limits.per_key.is_none()
            && !limits.replace
            && (limits.throttle.is_some() || window.is_some())
            && group.iter().all(|&i| news[i].limits == limits && news[i].rate.as_ref().map(|r| r.window) == window)
    }

    /// Decides the group's outcomes as `limits_answer` would one by one; the starts to write
    /// (admitted or queued) are pushed to `together`.
    pub(super) async fn decide_windowed(
        tx: &mut Tx<'_>,
        news: &[&NewInstance],
        group: &[usize],
        outcomes: &mut [StartOutcome],
        together: &mut Vec<usize>,
    ) -> Result<()> {
        let first = news[group[0]];
        let (workflow, limits) = (first.row.workflow_id, first.limits);
        Self::lock_workflow(tx, workflow).await?;
        let now = Utc::now().trunc_subsecs(6);
        // A slot holds a start back while the workflow runs its limit, or (queuing, not
        // refusing) while another instance waits before it.
        let mut free = match limits.instances {
            Some(limit) => {
                let (active,): (i64,) =
                    sqlx::query_as(ACTIVE_UP_TO).bind(workflow).bind(i64::from(limit)).fetch_one(&mut **tx).await?;
                PHASES.statement();
                i64::from(limit) - active
            }
            None => i64::MAX,
        };
        let mut others_queued = match limits.instances.is_some() && !limits.reject {
            true => {
                let (queued,): (bool,) =
                    sqlx::query_as(OTHER_QUEUED).bind(workflow).bind(Uuid::nil()).fetch_one(&mut **tx).await?;
                PHASES.statement();
                queued
            }
            false => false,
        };
        let (mut rate, mut throttle) = (Counts::default(), Counts::default());
        let mut refused_until: HashMap<String, DateTime<Utc>> = HashMap::new();
        let mut admission = None;
        for &i in group {
            let new = news[i];
            if let Some(check) = &new.rate {
                let scope = rate_scope(workflow);
                let used = rate.used_of(tx, &scope, &check.key, check.window, now).await?;
                if used >= i64::from(check.window.limit) {
                    let retry_at = match refused_until.get(&check.key) {
                        Some(at) => *at,
                        None => {
                            // As one by one: the stored marks and the group's own (newest) count.
                            let own = rate.marks.iter().filter(|m| m.0 == check.key).count() as i64;
                            let at = Self::window_refusal(tx, &scope, &check.key, check.window, now, own).await?;
                            let at = at.unwrap_or_else(|| check.window.expiry(now));
                            *refused_until.entry(check.key.clone()).or_insert(at)
                        }
                    };
                    outcomes[i] = StartOutcome::RateLimited { retry_at };
                    continue;
                }
            }
            if free <= 0 && limits.reject {
                outcomes[i] = StartOutcome::Rejected(Held::Workflow);
                continue;
            }
            if let Some(check) = &new.rate {
                rate.mark(&check.key, now);
            }
            together.push(i);
            if free <= 0 || others_queued {
                others_queued = limits.instances.is_some() && !limits.reject;
                outcomes[i] = StartOutcome::Queued;
                continue;
            }
            if let Some(window) = limits.throttle {
                let key = new.row.throttle_key.clone().unwrap_or_default();
                let waiting = throttle.waiting_of(tx, workflow, &key).await?;
                let used = throttle.used_of(tx, &throttle_scope(workflow), &key, window, now).await?;
                if waiting || used >= i64::from(window.limit) {
                    throttle.waiting.insert(key, true);
                    others_queued = limits.instances.is_some() && !limits.reject;
                    outcomes[i] = StartOutcome::Queued;
                    continue;
                }
                let at = match admission {
                    Some(at) => at,
                    None => *admission.insert(Self::admission_time(tx, workflow).await?),
                };
                throttle.mark(&key, at.max(new.admits_at));
            }
            free -= 1;
            // Without a slot or a throttle to order (a rate limit alone), a start is admitted
            // when it was decided, as `start_time` does.
            let at = match (limits.any(), admission) {
                (false, _) => new.admits_at,
                (true, Some(at)) => at.max(new.admits_at),
                (true, None) => (*admission.insert(Self::admission_time(tx, workflow).await?)).max(new.admits_at),
            };
            outcomes[i] = StartOutcome::Running { at };
        }
        if let Some(check) = &first.rate {
            Self::write_marks(tx, &rate_scope(workflow), check.window, &rate.marks).await?;
        }
        if let Some(window) = limits.throttle {
            Self::write_marks(tx, &throttle_scope(workflow), window, &throttle.marks).await?;
        }
        Ok(())
    }

    /// Records `marks` in `scope`'s windows, deleting their keys' marks no window counts.
    pub(super) async fn write_marks(
        tx: &mut Tx<'_>,
        scope: &str,
        window: TimeWindow,
        marks: &[(String, DateTime<Utc>)],
    ) -> Result<()> {
        let Some(oldest) = marks.iter().map(|m| m.1).min() else { return Ok(()) };
        let mut keys: Vec<&str> = marks.iter().map(|m| m.0.as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            sqlx::query(PRUNE_KEY).bind(scope).bind(key).bind(window.since(oldest)).execute(&mut **tx).await?;
            PHASES.statement();
        }
        for chunk in marks.chunks(crate::store::transitions::ROWS_PER_INSERT) {
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_MARKS);
            insert.push_values(chunk, |mut v, (key, at)| {
                v.push_bind(scope).push_bind(key.as_str()).push_bind(*at);
            });
            insert.build().execute(&mut **tx).await?;
            PHASES.statement();
        }
        Ok(())
    }
}

impl Counts {
    /// Starts `key` has in its window: read once, then counted here.
    async fn used_of(
        &mut self,
        tx: &mut Tx<'_>,
        scope: &str,
        key: &str,
        window: TimeWindow,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        if let Some(used) = self.used.get(key) {
            return Ok(*used);
        }
        let (used, _) = Store::window_use(&mut **tx, scope, key, window, now).await?;
        self.used.insert(key.to_owned(), used);
        Ok(used)
    }

    /// Whether a stored instance with throttle `key` waits (read once), or one of the group queued.
    async fn waiting_of(&mut self, tx: &mut Tx<'_>, workflow: Uuid, key: &str) -> Result<bool> {
        if let Some(waiting) = self.waiting.get(key) {
            return Ok(*waiting);
        }
        let (waiting,): (bool,) = sqlx::query_as(THROTTLE_LINE_WAITING)
            .bind(workflow)
            .bind(key)
            .bind(Uuid::nil())
            .fetch_one(&mut **tx)
            .await?;
        PHASES.statement();
        self.waiting.insert(key.to_owned(), waiting);
        Ok(waiting)
    }

    fn mark(&mut self, key: &str, at: DateTime<Utc>) {
        *self.used.entry(key.to_owned()).or_default() += 1;
        self.marks.push((key.to_owned(), at));
    }
}
