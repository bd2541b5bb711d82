//! Starts written together (`InstanceStore::start_instances`): the starts waiting at one moment
//! share one transaction, so one commit (one flush) and, per limited workflow, one hold of the
//! workflow's lock and one count of its slots instead of one of each per start. The outcomes
//! are those of the same starts made one after another, oldest first, so the limits hold
//! exactly as they do for single starts (across processes too: the lock and the counts are
//! the database's). Their rows go in a handful of statements whatever their number: instance
//! rows, node rows, then one sink (`sink.rs`) with the admitted ones' rows, their work and
//! everyone's first history. Only starts without an Idempotency-Key or a business key come
//! here: those can refuse in ways a shared transaction could not undo for one alone. Starts
//! with an Idempotency-Key come too: their keys are claimed first (`start_claims.rs`), and
//! a repeat is answered without being written.

use super::KeepBuilt;
use super::Store;
use crate::store::admission::{INSERT_INSTANCES, INSERT_NEW_NODES, ROOM_FOR_STARTS};
use crate::store::backend::Backend;
use crate::store::batch::BatchWrites;
use crate::store::phases::PHASES;
use crate::store::transitions::ROWS_PER_INSERT;
use crate::store::{Held, InstanceRow, NewInstance, StartOutcome, Writes};
use crate::store::{Result, StoreError};
use std::collections::HashMap;
use trellis_model::InstanceStatus;
use uuid::Uuid;

type Db = <Store as Backend>::Db;
type Tx<'c> = sqlx::Transaction<'c, Db>;

impl Store {
    pub(super) async fn start_batch_once(&self, news: &[&NewInstance]) -> Result<Vec<StartOutcome>> {
        debug_assert!(news.iter().all(|n| n.row.business_key.is_none()));
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let mut outcomes = vec![StartOutcome::Queued; news.len()];
        let repeated = Self::claim_start_keys(&mut tx, news, &mut outcomes).await?;
        // Workflows in id order (the order their locks are taken in, so two batches cannot
        // deadlock on them); each workflow's starts oldest first (within one priority level,
        // the order admission takes its queue in).
        let mut order: Vec<usize> = (0..news.len()).filter(|&i| !repeated[i]).collect();
        order.sort_by_key(|&i| (news[i].row.workflow_id, news[i].row.id));
        let mut appended = vec![0; news.len()];
        let mut together = Vec::with_capacity(news.len());
        for group in order.chunk_by(|&a, &b| news[a].row.workflow_id == news[b].row.workflow_id) {
            let limits = news[group[0]].limits;
            // A throttle's and a rate limit's windows: each key counted once for the group.
            if Self::windows_together(news, group) {
                Self::decide_windowed(&mut tx, news, group, &mut outcomes, &mut together).await?;
                continue;
            }
            // Under a key limit, each start's place depends on the keys of those before it:
            // asked one by one, as alone (so are starts made under limits a publish changed,
            // and those a throttle or rate limit counts in a window).
            if limits.per_key.is_some()
                || limits.throttle.is_some()
                || group.iter().any(|&i| news[i].rate.is_some())
                || group.iter().any(|&i| news[i].limits != limits)
            {
                for &i in group {
                    (outcomes[i], appended[i]) = self.start_alone(&mut tx, news[i]).await?;
                }
                continue;
            }
            let workflow = news[group[0]].row.workflow_id;
            let mut free = match limits.instances {
                Some(limit) => Self::room_for_starts(&mut tx, workflow, limit).await?,
                None => i64::MAX,
            };
            // Under a limit, the group's admissions share one time, read after the count
            // (`admission_clock.rs`); without, each start is admitted when it was decided.
            let admission = match limits.any() && free > 0 {
                true => Some(Self::admission_time(&mut tx, workflow).await?),
                false => None,
            };
            for &i in group {
                if free > 0 {
                    free -= 1;
                    let decided = news[i].admits_at;
                    outcomes[i] = StartOutcome::Running { at: admission.map_or(decided, |at| at.max(decided)) };
                } else if limits.reject {
                    outcomes[i] = StartOutcome::Rejected(Held::Workflow);
                    continue;
                }
                together.push(i);
            }
        }
        for (i, n) in self.write_together(&mut tx, news, &together, &outcomes).await? {
            appended[i] = n;
        }
        Self::settle_start_keys(&mut tx, news, &mut outcomes, &repeated).await?;
        tx.commit().await?;
        PHASES.transaction();
        PHASES.started_together(news.len());
        for ((new, outcome), appended) in news.iter().zip(&outcomes).zip(appended) {
            self.remember_start(new, outcome, appended);
        }
        Ok(outcomes)
    }

    /// A start decided and written on its own, in the batch's transaction; its outcome and
    /// how many history entries it wrote.
    async fn start_alone(&self, tx: &mut Tx<'_>, new: &NewInstance) -> Result<(StartOutcome, usize)> {
        let outcome = Self::limits_answer(tx, new).await?;
        if matches!(outcome, StartOutcome::Rejected(_) | StartOutcome::RateLimited { .. }) {
            return Ok((outcome, 0));
        }
        Self::insert_instance_rows(tx, new).await?;
        let appended = self.write_start(tx, new, &outcome).await?;
        Ok((outcome, appended))
    }

    /// Slots new starts of `workflow` may take, its lock held.
    pub(super) async fn room_for_starts(tx: &mut Tx<'_>, workflow: Uuid, limit: u32) -> Result<i64> {
        Self::lock_workflow(tx, workflow).await?;
        let (room,): (i64,) =
            sqlx::query_as(ROOM_FOR_STARTS).bind(workflow).bind(i64::from(limit)).fetch_one(&mut **tx).await?;
        PHASES.statement();
        Ok(room.max(0))
    }

    /// Writes the starts at `together` (decided: admitted or queued): their rows, then what
    /// admitting the admitted ones writes and everyone's first history, in one sink. Returns
    /// how many history entries each wrote.
    async fn write_together(
        &self,
        tx: &mut Tx<'_>,
        news: &[&NewInstance],
        together: &[usize],
        outcomes: &[StartOutcome],
    ) -> Result<Vec<(usize, usize)>> {
        if together.is_empty() {
            return Ok(Vec::new());
        }
        let starting: Vec<&NewInstance> = together.iter().map(|&i| news[i]).collect();
        Self::insert_instances(tx, &starting).await?;
        let mut batch = BatchWrites::default();
        let mut admitted: Vec<InstanceRow> = Vec::new();
        let mut appended = Vec::with_capacity(together.len());
        for &i in together {
            let new = news[i];
            let mut events = new.created_events.clone();
            let writes = if let StartOutcome::Running { at } = outcomes[i] {
                let on_admit = new.on_admit_at(at);
                events.extend(on_admit.events.iter().cloned());
                // The row as admitting it leaves it (`rev` 1: one past the inserted row's).
                admitted.push(super::admission::admitted(new, &on_admit).0.instance);
                Writes { events, ..on_admit }
            } else {
                events.extend(new.queued_events.iter().cloned());
                Writes { events, ..Writes::default() }
            };
            appended.push((i, writes.events.len()));
            batch.add(new.row.id, new.row.workflow_id, &writes);
        }
        let rows: Vec<&InstanceRow> = admitted.iter().collect();
        let first: HashMap<Uuid, i64> = starting.iter().map(|n| (n.row.id, 0)).collect();
        let mut sink = super::sink::Sink::new();
        Self::write_instance_rows(tx, &mut sink, &rows, false).await?;
        Self::write_rows(tx, &mut sink, &batch).await?;
        self.write_history(tx, &mut sink, &batch, &first).await?;
        sink.finish(tx).await?;
        Ok(appended)
    }

    /// New instances' rows (queued until their admission is written) and their nodes' rows.
    /// A unique rule broken is a `Conflict` naming it.
    pub(super) async fn insert_instances(tx: &mut Tx<'_>, news: &[&NewInstance]) -> Result<()> {
        for chunk in news.chunks(ROWS_PER_INSERT / 2) {
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_INSTANCES);
            insert.push_values(chunk, |mut v, new| {
                let row = &new.row;
                v.push_bind(row.id)
                    .push_bind(row.workflow_id)
                    .push_bind(row.version)
                    .push_bind(InstanceStatus::Queued)
                    .push_bind(&row.input)
                    .push_bind(None::<sqlx::types::Json<serde_json::Value>>)
                    .push_bind(None::<String>)
                    .push_bind(&row.business_key)
                    .push_bind(row.created_at)
                    .push_bind(None::<chrono::DateTime<chrono::Utc>>)
                    .push_bind(None::<chrono::DateTime<chrono::Utc>>)
                    .push_bind(&row.trace_id)
                    .push_bind(&row.parent_span_id)
                    .push_bind(1i32)
                    .push_bind(row.parent_instance_id)
                    .push_bind(&row.parent_node_id)
                    .push_bind(row.parent_attempt)
                    .push_bind(row.depth)
                    .push_bind(&row.concurrency_key)
                    .push_bind(row.handles_failure_of)
                    .push_bind(row.failure_depth)
                    .push_bind(&row.throttle_key)
                    .push_bind(row.priority)
                    .push_bind(row.queue_order)
                    .push_bind(&row.started_by);
            });
            let inserted = insert.build().keep_built().execute(&mut **tx).await;
            PHASES.statement();
            inserted.map_err(StoreError::from_sqlx)?;
        }
        let nodes: Vec<_> = news.iter().flat_map(|new| new.nodes.iter().map(move |n| (new.row.id, n))).collect();
        for chunk in nodes.chunks(ROWS_PER_INSERT * 4) {
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_NEW_NODES);
            insert.push_values(chunk, |mut v, (id, n)| {
                v.push_bind(*id).push_bind(&n.node_id).push_bind(n.position).push_bind(n.status).push_bind(0i32);
            });
            insert.build().keep_built().execute(&mut **tx).await?;
            PHASES.statement();
        }
        Ok(())
    }
}
