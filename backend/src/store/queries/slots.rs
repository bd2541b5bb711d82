//! `slots.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::phases::PHASES;
use crate::store::slots::{
    ADMISSIBLE_IDS, ADMISSIBLE_WAITING, KEY_AT_LIMIT, KEY_FULL, OTHER_QUEUED, WORKFLOW_HAS_ROOM,
};
use crate::store::Result;
use crate::store::{AdmissionLimits, Held, NewInstance, StartOutcome};
use uuid::Uuid;
type Db = <Store as Backend>::Db;

/// The keys of the instance asking for a slot: its concurrency key and its throttle key.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct AskingKeys<'a> {
    pub concurrency: Option<&'a str>,
    pub throttle: Option<&'a str>,
}

impl Store {
    /// What the workflow's limits make of a new start (its row inserted or not yet): refused
    /// by the rate limit or (under `on_limit: reject`) a full slot, queued, or admitted at a
    /// time read now, after the counts (`admission_clock.rs`) — and then counted in its
    /// throttle window at that time.
    pub(super) async fn limits_answer(tx: &mut sqlx::Transaction<'_, Db>, new: &NewInstance) -> Result<StartOutcome> {
        let row = &new.row;
        if let Some(rate) = &new.rate {
            if let Some(retry_at) = Self::rate_refusal(tx, row.workflow_id, rate).await? {
                return Ok(StartOutcome::RateLimited { retry_at });
            }
        }
        let mut outcome = None;
        if new.limits.any() {
            let keys =
                AskingKeys { concurrency: row.concurrency_key.as_deref(), throttle: row.throttle_key.as_deref() };
            if let Some(held) = Self::held_back(tx, row.workflow_id, new.limits, keys, row.id).await? {
                if new.limits.reject && held != Held::Throttle {
                    // Refused: not counted by the rate limit either (a batch's transaction goes on).
                    return Ok(StartOutcome::Rejected(held));
                }
                outcome = Some(StartOutcome::Queued);
            }
        }
        if let Some(rate) = &new.rate {
            Self::mark_rate(tx, row.workflow_id, rate).await?;
        }
        if let Some(queued) = outcome {
            return Ok(queued);
        }
        let at = Self::start_time(tx, new).await?;
        if let Some(window) = new.limits.throttle {
            let key = row.throttle_key.as_deref().unwrap_or_default();
            Self::mark_throttle(tx, row.workflow_id, window, &[key], at).await?;
        }
        Ok(StartOutcome::Running { at })
    }

    /// What holds back `asking` (a start that inserted its row, or a retry), or
    /// `None` if it may run now. Takes the workflow's lock. The throttle is asked last, so
    /// that an instance it lets through is one that runs (and is counted in its window by
    /// the caller, at the admission's time: `mark_throttle`).
    ///
    /// Its key is full when `per_key` of its peers run or any peer queued before it
    /// (FIFO per key). The workflow is full when `instances` run or an instance that
    /// could be admitted now is waiting (FIFO: no overtaking); instances held only
    /// by their own key do not count as waiting here.
    pub(super) async fn held_back(
        tx: &mut sqlx::Transaction<'_, Db>,
        workflow: Uuid,
        limits: AdmissionLimits,
        keys: AskingKeys<'_>,
        asking: Uuid,
    ) -> Result<Option<Held>> {
        let key = keys.concurrency;
        if let Some(held) = Self::held_by_slots(tx, workflow, limits, key, asking).await? {
            return Ok(Some(held));
        }
        if let Some(window) = limits.throttle {
            if Self::throttled(tx, workflow, window, keys.throttle.unwrap_or_default(), asking).await? {
                return Ok(Some(Held::Throttle));
            }
        }
        Ok(None)
    }

    /// `held_back`'s concurrency part: `max_per_key`, then `max_concurrent_instances`.
    async fn held_by_slots(
        tx: &mut sqlx::Transaction<'_, Db>,
        workflow: Uuid,
        limits: AdmissionLimits,
        key: Option<&str>,
        asking: Uuid,
    ) -> Result<Option<Held>> {
        Self::lock_workflow(tx, workflow).await?;
        // Under `on_limit: reject` (and `replace`) only a full slot refuses: instances queued
        // there wait for a throttle window (or a publish changed the setting), not for a slot.
        let fifo = !limits.reject;
        if let (Some(per_key), Some(key)) = (limits.per_key, key) {
            let query = match fifo {
                true => sqlx::query_as(KEY_FULL).bind(workflow).bind(key).bind(i64::from(per_key)).bind(asking),
                false => sqlx::query_as(KEY_AT_LIMIT).bind(workflow).bind(key).bind(i64::from(per_key)),
            };
            let (full,): (bool,) = query.fetch_one(&mut **tx).await?;
            PHASES.statement();
            if full {
                return Ok(Some(Held::Key));
            }
        }
        let Some(limit) = limits.instances else { return Ok(None) };
        let (room,): (bool,) =
            sqlx::query_as(WORKFLOW_HAS_ROOM).bind(workflow).bind(i64::from(limit)).fetch_one(&mut **tx).await?;
        PHASES.statement();
        if !room || (fifo && Self::admissible_waiting(tx, workflow, limits.per_key, key, asking).await?) {
            return Ok(Some(Held::Workflow));
        }
        Ok(None)
    }

    /// Whether an instance other than `asking` waits that admission could take now:
    /// one without a key, or one whose key has room. A key's room is read once per
    /// key with instances waiting, not once per waiting instance, so a long line
    /// behind one busy key stays cheap. `asking`'s own key has no one else waiting
    /// (the key check before this one made sure).
    async fn admissible_waiting(
        tx: &mut sqlx::Transaction<'_, Db>,
        workflow: Uuid,
        per_key: Option<u32>,
        key: Option<&str>,
        asking: Uuid,
    ) -> Result<bool> {
        let Some(per_key) = per_key else {
            let (waiting,): (bool,) =
                sqlx::query_as(OTHER_QUEUED).bind(workflow).bind(asking).fetch_one(&mut **tx).await?;
            PHASES.statement();
            return Ok(waiting);
        };
        let (waiting,): (bool,) = sqlx::query_as(ADMISSIBLE_WAITING)
            .bind(workflow)
            .bind(asking)
            .bind(key.unwrap_or_default())
            .bind(i64::from(per_key))
            .fetch_one(&mut **tx)
            .await?;
        PHASES.statement();
        Ok(waiting)
    }

    /// The oldest queued instances (in admission's order) the slots have room for: at most
    /// `free`, and under a key limit those whose key has room.
    pub(super) async fn slot_admissible(
        tx: &mut sqlx::Transaction<'_, Db>,
        workflow: Uuid,
        limits: AdmissionLimits,
        free: i64,
    ) -> Result<Vec<Uuid>> {
        match limits.per_key {
            Some(per_key) => Self::admissible_ids(tx, workflow, per_key, free).await,
            None => {
                PHASES.statement();
                Ok(sqlx::query_scalar(crate::store::admission::OLDEST_QUEUED)
                    .bind(workflow)
                    .bind(free.min(1_000))
                    .fetch_all(&mut **tx)
                    .await?)
            }
        }
    }

    /// The queued instances an admission may take into `free` workflow slots,
    /// oldest first, at most `per_key` running per key counting those it takes.
    ///
    /// One statement: each waiting instance's place in its key's line, against the
    /// room its key has (whose count is read only for the first `per_key` in each
    /// line), so instances past their key's room are skipped and never fill the
    /// page in place of instances with other keys.
    pub(super) async fn admissible_ids(
        tx: &mut sqlx::Transaction<'_, Db>,
        workflow: Uuid,
        per_key: u32,
        free: i64,
    ) -> Result<Vec<Uuid>> {
        let ids: Vec<Uuid> = sqlx::query_scalar(ADMISSIBLE_IDS)
            .bind(workflow)
            .bind(i64::from(per_key))
            .bind(free.min(1_000))
            .fetch_all(&mut **tx)
            .await?;
        PHASES.statement();
        Ok(ids)
    }
}
