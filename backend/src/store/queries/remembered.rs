//! A batch written from remembered snapshots (`store/snapshots.rs`): no lock, no read, and on
//! Postgres no transaction around it — the batch's writes are one statement, which keeps them
//! only if every instance's `rev` and every fence were as remembered (`Sink::close_returning`).
//! Anything else (an instance not remembered, a write one statement cannot hold, a snapshot out
//! of date, any error) writes nothing and leaves the batch to the locked path
//! (`transitions.rs`), which reads the instances afresh.

use super::sink::{Sink, STALE};
use super::transitions::push_fenced_delete;
use super::Store;
use crate::store::backend::Backend;
use crate::store::batch::{by_instance, BatchWrites, Decided, Step, StepDecide};
use crate::store::phases::{Lap, Phase, PHASES};
use crate::store::snapshots::Remembered;
use crate::store::work::Fence;
use crate::store::{InstanceRow, Snapshot, TransitionOutcome};
use crate::store::{Result, StoreError};
use std::collections::HashMap;
use uuid::Uuid;

type Db = <Store as Backend>::Db;
type Conn = <Db as sqlx::Database>::Connection;

/// Postgres's answer when `trellis_snapshot_held` found a guard broken (migration 0025).
const SNAPSHOT_NOT_HELD: &str = "TRSTL";

/// Whether a failed write surely kept nothing, and if so whether a guard refused it (the
/// database other than remembered): `None` if it may have been kept.
fn nothing_kept(e: &StoreError) -> Option<bool> {
    match e {
        // A guard on SQLite, or a write too large for one statement (nothing was sent).
        StoreError::Conflict(what) => Some(what == STALE),
        // The connection or the server going away (a pooler reports it as an error answer):
        // the write may have been kept.
        StoreError::Database(sqlx::Error::Database(db))
            if db.code().is_some_and(|c| c.starts_with("08") || c.starts_with("57P")) =>
        {
            None
        }
        // The database answered with an error: the statement (or transaction) was undone.
        StoreError::Database(sqlx::Error::Database(db)) => Some(db.code().as_deref() == Some(SNAPSHOT_NOT_HELD)),
        // No connection to send it on.
        StoreError::Database(sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed) => Some(false),
        StoreError::Database(_) => None,
    }
}

impl Store {
    /// The batch's outcomes if it was written from remembered snapshots; `None` if nothing
    /// was written (the caller takes the locked path). An error is one after which the write
    /// may have been kept (the connection lost while it ran), as a failed `COMMIT` may have.
    pub(super) async fn transition_batch_remembered(
        &self,
        steps: &[Step<'_>],
        decide: StepDecide<'_>,
    ) -> Result<Option<Vec<TransitionOutcome>>> {
        let groups = by_instance(steps);
        let ids: Vec<Uuid> = groups.iter().map(|(id, _)| *id).collect();
        let Some((mut snapshots, last_seq)) = self.snapshots().recall(&ids) else { return Ok(None) };
        let mut lap = Lap::start();
        let decided = Decided::steps(steps, &groups, &mut snapshots, |_| false, decide);
        // A restart or a failure's triage is written in statements of its own, and an
        // instance whose snapshot lacks a node it wrote would be remembered wrong.
        let one_statement = decided.updates.iter().all(|(_, u)| !u.restart && u.failure.is_none());
        if !one_statement || !decided.incomplete.is_empty() {
            return Ok(None);
        }
        lap.lap(Phase::Decide);
        // Every instance is written, changed or not: its row's update is what checks `rev`
        // (and, on Postgres, locks it until the write ends, as the locked path would).
        for id in ids.iter().filter(|id| !decided.written.contains(id)) {
            snapshots.get_mut(id).expect("recalled").instance.rev += 1;
        }
        let fences: Vec<&Fence> = steps.iter().filter_map(|s| s.fence).collect();
        let rows: Vec<&InstanceRow> = ids.iter().map(|id| &snapshots[id].instance).collect();
        let first_seq = match self.write_remembered(&rows, &fences, &decided.batch, &last_seq).await {
            Ok(first_seq) => first_seq,
            Err(e) => {
                self.snapshots().forget(&ids);
                return match nothing_kept(&e) {
                    Some(refused) => {
                        if refused {
                            PHASES.remembered(false);
                        }
                        tracing::debug!(error = %e, "not written from remembered snapshots; locking instead");
                        Ok(None)
                    }
                    None => Err(e),
                };
            }
        };
        PHASES.remembered(true);
        lap.lap(Phase::History);
        PHASES.committed(steps.len());
        self.remember(snapshots, &decided, &last_seq, &first_seq);
        Ok(Some(decided.outcomes(steps, &first_seq)))
    }

    /// Writes the batch guarded by `rows`' `rev`s and the fences: on Postgres one statement on
    /// a connection of its own (in a transaction behind a pooler), on SQLite one transaction.
    async fn write_remembered(
        &self,
        rows: &[&InstanceRow],
        fences: &[&Fence],
        batch: &BatchWrites,
        last_seq: &HashMap<Uuid, i64>,
    ) -> Result<HashMap<Uuid, i64>> {
        let _guard = self.write_guard().await;
        if let Some(mut conn) = self.autocommit_connection().await? {
            let first_seq = self.write_guarded(&mut conn, rows, fences, batch, last_seq).await?;
            PHASES.autocommit(0);
            return Ok(first_seq);
        }
        let mut tx = self.pool().begin().await?;
        let first_seq = self.write_guarded(&mut tx, rows, fences, batch, last_seq).await?;
        tx.commit().await?;
        PHASES.transaction();
        Ok(first_seq)
    }

    async fn write_guarded(
        &self,
        conn: &mut Conn,
        rows: &[&InstanceRow],
        fences: &[&Fence],
        batch: &BatchWrites,
        last_seq: &HashMap<Uuid, i64>,
    ) -> Result<HashMap<Uuid, i64>> {
        let mut sink = Sink::whole();
        Self::write_instance_rows(conn, &mut sink, rows, true).await?;
        if !fences.is_empty() {
            push_fenced_delete(sink.open(), fences);
            sink.close_returning(fences.len() * 3, fences.len())?;
        }
        Self::write_rows(conn, &mut sink, batch).await?;
        let first_seq = self.write_history(conn, &mut sink, batch, last_seq).await?;
        sink.finish(conn).await?;
        Ok(first_seq)
    }

    /// Remembers the batch's instances as it left them (`snapshots`, decided on and absorbed),
    /// for their next transitions.
    pub(super) fn remember(
        &self,
        snapshots: HashMap<Uuid, Snapshot>,
        decided: &Decided,
        last_seq: &HashMap<Uuid, i64>,
        first_seq: &HashMap<Uuid, i64>,
    ) {
        let last = decided.last_seqs(last_seq, first_seq);
        for (id, snapshot) in snapshots {
            match last.get(&id) {
                Some(&last_seq) if !decided.incomplete.contains(&id) => {
                    self.snapshots().remember(id, Remembered { snapshot, last_seq })
                }
                _ => self.snapshots().forget(&[id]),
            }
        }
    }
}
