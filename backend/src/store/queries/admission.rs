//! `admission.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::slots::AskingKeys;
use super::KeepBuilt;
use super::Store;
use crate::store::admission::{
    CLAIM_START_REQUEST, COUNT_ACTIVE, DELETE_INSTANCE_NODES, FIRST_START_REQUEST, KEY_QUEUE_PLACE,
    LATEST_SUCCEEDED_WITH_KEY, LATEST_WITH_KEY, LIVE_WITH_KEY, MARK_START_RUNNING, QUEUED_AHEAD,
    QUEUED_AHEAD_UNDER_KEYS, SET_INSTANCE_VERSION,
};
use crate::store::backend::Backend;
use crate::store::instances::INSERT_NODES;
use crate::store::phases::PHASES;
use crate::store::work::NewWork;
use crate::store::{
    AdmissionLimits, InstanceRow, NewInstance, NodeRow, Refusable, Snapshot, StartOutcome, StoredStart,
    TransitionOutcome, Writes,
};
use crate::store::{AdmitDecide, Held, Result, RetryDecide, StoreError};
use chrono::SubsecRound;
use const_format::concatcp;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use uuid::Uuid;
type Db = <Store as Backend>::Db;
const LOCK_ROW: &str = <Store as Backend>::LOCK_ROW;
const LOCK_WORKFLOW: &str = concatcp!("SELECT id FROM workflows WHERE id = $1", LOCK_ROW);

impl Store {
    /// Whether the key-reuse policy refuses `key` because of an earlier instance.
    /// It holds the workflow lock, so two starts cannot both find no earlier one.
    async fn key_refusal(
        tx: &mut sqlx::Transaction<'_, Db>,
        workflow: Uuid,
        key: &str,
        policy: trellis_model::KeyReuse,
    ) -> Result<Option<StartOutcome>> {
        use trellis_model::KeyReuse;
        let sql = match policy {
            KeyReuse::AllowDuplicate | KeyReuse::TerminateIfRunning => return Ok(None),
            KeyReuse::RejectDuplicate => LATEST_WITH_KEY,
            KeyReuse::AllowDuplicateFailedOnly => LATEST_SUCCEEDED_WITH_KEY,
        };
        Self::lock_workflow(tx, workflow).await?;
        let earlier: Option<(Uuid, trellis_model::InstanceStatus)> =
            sqlx::query_as(sql).bind(workflow).bind(key).fetch_optional(&mut **tx).await?;
        PHASES.statement();
        Ok(earlier.map(|(id, status)| StartOutcome::KeyUsed { id, status }))
    }

    /// The live instance holding `key`, if there still is one.
    async fn live_with_key(&self, workflow: Uuid, key: Option<&str>) -> Result<Option<Uuid>> {
        let live: Option<(Uuid,)> =
            sqlx::query_as(LIVE_WITH_KEY).bind(workflow).bind(key).fetch_optional(self.pool()).await?;
        Ok(live.map(|(id,)| id))
    }
    /// Inserts the new instance (queued until admitted) and its nodes. False, with
    /// nothing inserted, if another live instance holds its business key.
    pub(super) async fn insert_instance_rows(tx: &mut sqlx::Transaction<'_, Db>, new: &NewInstance) -> Result<bool> {
        match Self::insert_instances(tx, &[new]).await {
            // The id is fresh, so the only unique rule this can break is one live
            // instance per key (`instances_one_live_per_key`).
            Err(StoreError::Conflict(_)) if new.row.business_key.is_some() => Ok(false),
            other => other.map(|()| true),
        }
    }

    pub(super) async fn start_instance_once(&self, new: &NewInstance) -> Result<StartOutcome> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let row = &new.row;
        if let Some((key, hash)) = &new.idempotency {
            // First, so a concurrent start with the same key waits on this row and then
            // finds it, and a repeated request is answered before any limit is checked.
            let claimed = sqlx::query(CLAIM_START_REQUEST)
                .bind(row.workflow_id)
                .bind(key)
                .bind(hash)
                .bind(row.id)
                .bind(row.version)
                .bind(row.created_at)
                .execute(&mut *tx)
                .await?;
            PHASES.statement();
            if claimed.rows_affected() == 0 {
                let first: StoredStart =
                    sqlx::query_as(FIRST_START_REQUEST).bind(row.workflow_id).bind(key).fetch_one(&mut *tx).await?;
                PHASES.statement();
                return Ok(StartOutcome::Repeated(first));
            }
        }
        if let Some(key) = &row.business_key {
            if let Some(refused) = Self::key_refusal(&mut tx, row.workflow_id, key, new.key_reuse).await? {
                return Ok(refused);
            }
        }
        // Without a business key the rows need no lock, so they go in before the
        // workflow lock is taken: the lock every start of a limited workflow waits for
        // is held for two statements fewer. A keyed insert stays after the lock: made
        // earlier, it could wait on the key's unique index for a start that holds the
        // lock and is waiting in turn for this one.
        let rows_first = row.business_key.is_none();
        if rows_first {
            Self::insert_instance_rows(&mut tx, new).await?;
        }
        let outcome = Self::limits_answer(&mut tx, new).await?;
        if matches!(outcome, StartOutcome::Rejected(_) | StartOutcome::RateLimited { .. }) {
            return Ok(outcome);
        }
        if !rows_first && !Self::insert_instance_rows(&mut tx, new).await? {
            drop(tx);
            return Ok(StartOutcome::KeyLive(self.live_with_key(row.workflow_id, row.business_key.as_deref()).await?));
        }
        let appended = self.write_start(&mut tx, new, &outcome).await?;
        if let (Some((key, _)), StartOutcome::Running { .. }) = (&new.idempotency, &outcome) {
            sqlx::query(MARK_START_RUNNING).bind(row.workflow_id).bind(key).execute(&mut *tx).await?;
            PHASES.statement();
        }
        tx.commit().await?;
        PHASES.transaction();
        self.remember_start(new, &outcome, appended);
        Ok(outcome)
    }

    /// Writes what an inserted instance's start does beside its rows: admitted (`Running`),
    /// its admission's writes; its first history (creation, then admission or waiting in the
    /// queue), starting at 1. Returns how many history entries it wrote.
    pub(super) async fn write_start(
        &self,
        tx: &mut sqlx::Transaction<'_, Db>,
        new: &NewInstance,
        outcome: &StartOutcome,
    ) -> Result<usize> {
        let row = &new.row;
        let mut events = new.created_events.clone();
        if let StartOutcome::Running { at } = *outcome {
            let mut on_admit = new.on_admit_at(at);
            events.append(&mut on_admit.events);
            self.apply_writes(tx, row.id, row.workflow_id, &mut on_admit).await?;
        } else {
            events.extend(new.queued_events.iter().cloned());
        }
        // `on_admit`'s entries were moved into `events`: this is the instance's first history.
        self.append_first_events(tx, row.id, row.workflow_id, &events).await?;
        Ok(events.len())
    }

    /// Once its transaction committed: a start that ran is remembered as it wrote it — if this
    /// process runs its first attempts at once, so that it transitions again at once. One whose
    /// attempts wait for a claim may wait behind a backlog of thousands, which it would only
    /// crowd out of memory: it is read when claimed.
    pub(super) fn remember_start(&self, new: &NewInstance, outcome: &StartOutcome, appended: usize) {
        let runs_at_once = !new.on_admit.new_work.iter().any(NewWork::is_unleased_run);
        if !runs_at_once {
            return;
        }
        if let StartOutcome::Running { at } = *outcome {
            if let Some(started) = started_snapshot(new, at, appended) {
                self.snapshots().remember(new.row.id, started);
            }
        }
    }

    pub(super) async fn retry_instance_once(
        &self,
        id: Uuid,
        limits: AdmissionLimits,
        migrate: Option<(i64, &[NodeRow])>,
        decide: RetryDecide<'_>,
    ) -> Result<Refusable<TransitionOutcome>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let Some(peek) = Self::load_snapshot(&mut tx, id, false).await? else {
            return Ok(Ok(TransitionOutcome::NotFound));
        };
        let workflow = peek.instance.workflow_id;
        let mut admit = true;
        if limits.any() {
            // Workflow lock, then instance lock: the order admission takes them in.
            let i = &peek.instance;
            let keys = AskingKeys { concurrency: i.concurrency_key.as_deref(), throttle: i.throttle_key.as_deref() };
            let held = Self::held_back(&mut tx, workflow, limits, keys, id).await?;
            admit = held.is_none();
            if let (Some(held), true) = (held, limits.reject) {
                if held != Held::Throttle {
                    return Ok(Err(held));
                }
            }
        }
        let Some(mut snapshot) = Self::load_snapshot(&mut tx, id, true).await? else {
            return Ok(Ok(TransitionOutcome::NotFound));
        };
        if let Some((version, nodes)) = migrate {
            // Rolled back with the rest if `decide` finds the retry does not apply.
            sqlx::query(SET_INSTANCE_VERSION).bind(version).bind(id).execute(&mut *tx).await?;
            PHASES.statement();
            sqlx::query(DELETE_INSTANCE_NODES).bind(id).execute(&mut *tx).await?;
            PHASES.statement();
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_NODES);
            insert.push_values(nodes, |mut v, n| super::transitions::bind_node_row(&mut v, id, n));
            insert.build().keep_built().execute(&mut *tx).await?;
            PHASES.statement();
            snapshot = Self::load_snapshot(&mut tx, id, true).await?.ok_or(StoreError::Conflict("instance".into()))?;
        }
        // Read after the slot count (see `admission_clock.rs`); without limits, no slot to order.
        let at = match limits.any() {
            true => Self::admission_time(&mut tx, workflow).await?,
            false => chrono::Utc::now().trunc_subsecs(6),
        };
        let mut writes = decide(&snapshot, admit, at);
        if writes.is_empty() {
            return Ok(Ok(TransitionOutcome::Unchanged));
        }
        if let (Some(window), true) = (limits.throttle, admit) {
            let key = snapshot.instance.throttle_key.as_deref().unwrap_or_default();
            Self::mark_throttle(&mut tx, workflow, window, &[key], at).await?;
        }
        self.snapshots().forget(&[id]);
        if writes.forget_map_items {
            sqlx::query(crate::store::map_items::CLEAR_MAP_ITEMS).bind(id).execute(&mut *tx).await?;
            PHASES.statement();
        }
        self.apply_writes(&mut tx, id, workflow, &mut writes).await.map_err(|e| match e {
            StoreError::Database(e) => StoreError::from_sqlx(e),
            e => e,
        })?;
        tx.commit().await?;
        PHASES.transaction();
        Ok(Ok(TransitionOutcome::Applied(Box::new(writes))))
    }

    pub(super) async fn admit_queued_once(
        &self,
        workflow: Uuid,
        limits: AdmissionLimits,
        decide: AdmitDecide<'_>,
    ) -> Result<Vec<(Uuid, Writes)>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        Self::lock_workflow(&mut tx, workflow).await?;
        let free = match limits.instances {
            Some(limit) => (i64::from(limit) - Self::active_count(&mut tx, workflow).await?).max(0),
            None => i64::MAX,
        };
        let (ids, throttle_keys) = match limits.throttle {
            None => (Self::slot_admissible(&mut tx, workflow, limits, free).await?, HashMap::new()),
            Some(window) => {
                // The page comes from the windows' side: a busy key's long line cannot fill it
                // in place of keys with room. Under a key limit, the slots' choice narrows it.
                let room = Self::throttle_admissible(&mut tx, workflow, window).await?;
                let mut ids: Vec<Uuid> = room.iter().map(|(id, _)| *id).collect();
                if limits.per_key.is_some() {
                    let slots: HashSet<Uuid> =
                        Self::slot_admissible(&mut tx, workflow, limits, 1_000).await?.into_iter().collect();
                    ids.retain(|id| slots.contains(id));
                }
                ids.truncate(usize::try_from(free).unwrap_or(usize::MAX));
                (ids, room.into_iter().collect::<HashMap<Uuid, String>>())
            }
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // Read now, after the count, not by the caller before the lock (`admission_clock.rs`).
        let at = Self::admission_time(&mut tx, workflow).await?;
        if let Some(window) = limits.throttle {
            let keys: Vec<&str> = ids.iter().filter_map(|id| throttle_keys.get(id).map(String::as_str)).collect();
            Self::mark_throttle(&mut tx, workflow, window, &keys, at).await?;
        }
        let admitted = self.admit_locked(&mut tx, workflow, &ids, &|s: &Snapshot| decide(s, at)).await?;
        tx.commit().await?;
        PHASES.transaction();
        Ok(admitted)
    }

    /// Admits `ids` the way a batch of transitions is written (`transitions.rs`),
    /// so the workflow lock is held for a handful of statements however many are
    /// admitted: locked and re-read together (a cancel may have got there first),
    /// each decided on its own row, then instance rows, node rows and work, and
    /// history written once for all of them.
    async fn admit_locked(
        &self,
        tx: &mut sqlx::Transaction<'_, Db>,
        workflow: Uuid,
        ids: &[Uuid],
        decide: &(dyn Fn(&Snapshot) -> Writes + Send + Sync),
    ) -> Result<Vec<(Uuid, Writes)>> {
        let (mut snapshots, last_seq) = Self::lock_snapshots(tx, ids).await?;
        let mut batch = crate::store::batch::BatchWrites::default();
        let mut updates = Vec::new();
        let mut admitted = Vec::with_capacity(snapshots.len());
        for id in ids {
            let Some(snapshot) = snapshots.get_mut(id) else { continue };
            let writes = decide(snapshot);
            crate::store::batch::absorb(snapshot, &writes);
            snapshot.instance.rev += 1;
            batch.add(*id, workflow, &writes);
            if let Some(u) = &writes.instance {
                updates.push((*id, u.clone()));
            }
            admitted.push((*id, writes));
        }
        let written: Vec<Uuid> = admitted.iter().map(|(id, _)| *id).collect();
        self.snapshots().forget(&written);
        let mut sink = super::sink::Sink::new();
        Self::write_instance_updates(tx, &mut sink, &updates, &snapshots, &written).await?;
        Self::write_rows(tx, &mut sink, &batch).await?;
        let first_seq = self.write_history(tx, &mut sink, &batch, &last_seq).await?;
        sink.finish(tx).await?;
        for (id, writes) in &mut admitted {
            if !writes.events.is_empty() {
                writes.first_seq = first_seq.get(id).copied();
            }
        }
        Ok(admitted)
    }

    async fn active_count(tx: &mut sqlx::Transaction<'_, Db>, workflow: Uuid) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as(COUNT_ACTIVE).bind(workflow).fetch_one(&mut **tx).await?;
        PHASES.statement();
        Ok(n)
    }

    pub(super) async fn lock_workflow(tx: &mut sqlx::Transaction<'_, Db>, workflow: Uuid) -> Result<()> {
        sqlx::query(LOCK_WORKFLOW).bind(workflow).fetch_optional(&mut **tx).await?;
        PHASES.statement();
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::store::AdmissionQueue for Store {
    async fn queue_place(&self, workflow: Uuid, id: Uuid, per_key: Option<u32>) -> Result<crate::store::QueuePlace> {
        // Admission takes the oldest queued id first (FIFO), so those before it are
        // ahead — except, under a key limit, those held by their own key.
        let (ahead,): (i64,) = match per_key {
            Some(per_key) => {
                sqlx::query_as(QUEUED_AHEAD_UNDER_KEYS)
                    .bind(workflow)
                    .bind(i64::from(per_key))
                    .bind(id)
                    .fetch_one(self.pool())
                    .await?
            }
            None => sqlx::query_as(QUEUED_AHEAD).bind(workflow).bind(id).fetch_one(self.pool()).await?,
        };
        let (active,): (i64,) = sqlx::query_as(COUNT_ACTIVE).bind(workflow).fetch_one(self.pool()).await?;
        Ok(crate::store::QueuePlace { ahead, active })
    }

    async fn key_queue_place(&self, workflow: Uuid, key: &str, id: Uuid) -> Result<crate::store::QueuePlace> {
        let (ahead, active): (i64, i64) =
            sqlx::query_as(KEY_QUEUE_PLACE).bind(workflow).bind(key).bind(id).fetch_one(self.pool()).await?;
        Ok(crate::store::QueuePlace { ahead, active })
    }
}

/// A started instance as its start wrote it (`insert_instance_rows`, then `on_admit` and one
/// more `rev` by `apply_writes`), with `appended` history entries: remembered, so that its
/// first transition need not read it either.
fn started_snapshot(
    new: &NewInstance,
    at: chrono::DateTime<chrono::Utc>,
    appended: usize,
) -> Option<crate::store::snapshots::Remembered> {
    let (snapshot, complete) = admitted(new, &new.on_admit_at(at));
    complete.then_some(crate::store::snapshots::Remembered { snapshot, last_seq: appended as i64 })
}

/// An instance as admitting it at its start (`on_admit`) leaves it, and whether that holds
/// every node row admitting it wrote (`batch::absorb`).
pub(super) fn admitted(new: &NewInstance, on_admit: &Writes) -> (Snapshot, bool) {
    let instance = InstanceRow {
        status: trellis_model::InstanceStatus::Queued,
        output: None,
        error: None,
        started_at: None,
        ended_at: None,
        run: 1,
        rev: 1,
        ..new.row.clone()
    };
    let nodes = new.nodes.iter().map(|n| Arc::new(NodeRow::fresh(n.node_id.clone(), n.position, n.status))).collect();
    let mut snapshot = Snapshot { instance, nodes };
    let complete = crate::store::batch::absorb(&mut snapshot, on_admit);
    (snapshot, complete)
}
