//! `transitions.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::sink::Sink;
use super::KeepBuilt;
use super::{push_binds, Store};
use crate::store::backend::Backend;
use crate::store::batch::{by_instance, BatchWrites, Decided, Step, StepDecide};
use crate::store::instances::{EVENTS_PER_INSERT, INSERT_NODES};
use crate::store::phases::{Lap, Phase, PHASES};
use crate::store::transitions::ROWS_PER_INSERT;
use crate::store::transitions::{
    DELETE_ENDED_WORK, DELETE_FENCED_WORK, DELETE_WORK_OF_INSTANCES, INSERT_EVENTS, INSERT_WAKE_HEAD, INSERT_WAKE_TAIL,
    INSERT_WORK, INSTANCES_OF, LAST_SEQS, RESTART_INSTANCE, SET_FAILED_NODE, SNAPSHOT_NODES_JOIN, SNAPSHOT_NODES_OF,
    UPDATE_INSTANCE, UPDATE_INSTANCE_ROWS, UPDATE_INSTANCE_ROWS_TAIL, UPSERT_NODES_TAIL,
};
use crate::store::work::Fence;
use crate::store::Result;
use crate::store::{InstanceRow, InstanceUpdate, NewEvent, NodeRow, Snapshot, TransitionOutcome};
use sqlx::types::Json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use uuid::Uuid;
type Db = <Store as Backend>::Db;
type Tx<'t> = sqlx::Transaction<'t, Db>;
type Conn = <Db as sqlx::Database>::Connection;
const LOCK_ROW: &str = <Store as Backend>::LOCK_ROW;
const NOTIFY_EVENTS: Option<(&str, &str)> = <Store as Backend>::NOTIFY_EVENTS;

#[derive(sqlx::FromRow)]
struct NodeOf {
    instance_id: Uuid,
    #[sqlx(flatten)]
    row: NodeRow,
    /// The `seq` of the instance's last history entry (none yet: NULL).
    last_seq: Option<i64>,
}

impl Store {
    /// Locks the instances (in id order) and reads them with their nodes, and the `seq`
    /// of each one's last history entry. That is read with the nodes, in a statement
    /// begun after the lock was granted: read in the locking statement, Postgres would
    /// take it from the snapshot of before the wait for the lock, missing what the
    /// lock's last holder appended.
    pub(super) async fn lock_snapshots(
        tx: &mut Tx<'_>,
        ids: &[Uuid],
    ) -> Result<(HashMap<Uuid, Snapshot>, HashMap<Uuid, i64>)> {
        let mut sql = sqlx::QueryBuilder::<Db>::new(INSTANCES_OF);
        push_binds(&mut sql, ids.iter().copied());
        sql.push(") ORDER BY id").push(LOCK_ROW);
        let rows: Vec<InstanceRow> = sql.build_query_as().keep_built().fetch_all(&mut **tx).await?;
        PHASES.statement();
        // The last seq is looked up per instance (a correlated MAX the primary key
        // answers from its end), never by aggregating the instances' history: with
        // statistics lagging a fast-growing history, Postgres planned that aggregate
        // as a parallel scan costing milliseconds per batch. MATERIALIZED keeps the
        // lookup once per instance: folded into the join it would run once per node.
        let mut sql = sqlx::QueryBuilder::<Db>::new(SNAPSHOT_NODES_OF);
        push_binds(&mut sql, ids.iter().copied());
        sql.push(SNAPSHOT_NODES_JOIN);
        push_binds(&mut sql, ids.iter().copied());
        sql.push(") ORDER BY n.instance_id, n.position");
        let nodes: Vec<NodeOf> = sql.build_query_as().keep_built().fetch_all(&mut **tx).await?;
        PHASES.statement();
        let mut snapshots: HashMap<Uuid, Snapshot> =
            rows.into_iter().map(|instance| (instance.id, Snapshot { instance, nodes: Vec::new() })).collect();
        let mut last_seq = HashMap::new();
        for node in nodes {
            if let Some(snapshot) = snapshots.get_mut(&node.instance_id) {
                last_seq.insert(node.instance_id, node.last_seq.unwrap_or(0));
                snapshot.nodes.push(Arc::new(node.row));
            }
        }
        Ok((snapshots, last_seq))
    }

    /// Deletes the work items whose fences still hold; returns their ids.
    async fn consume_fences(tx: &mut Tx<'_>, steps: &[Step<'_>]) -> Result<HashSet<Uuid>> {
        let fences: Vec<_> = steps.iter().filter_map(|s| s.fence).collect();
        if fences.is_empty() {
            return Ok(HashSet::new());
        }
        let mut sql = sqlx::QueryBuilder::<Db>::new("");
        push_fenced_delete(&mut sql, &fences);
        let done: Vec<(Uuid,)> = sql.build_query_as().keep_built().fetch_all(&mut **tx).await?;
        PHASES.statement();
        Ok(done.into_iter().map(|(id,)| id).collect())
    }

    /// Writes one step's change of the instance row, and `bump` more to its `rev`.
    pub(super) async fn write_instance(conn: &mut Conn, id: Uuid, u: &InstanceUpdate, bump: i64) -> Result<()> {
        if u.restart {
            sqlx::query(RESTART_INSTANCE).bind(id).execute(&mut *conn).await?;
            PHASES.statement();
        }
        if let Some((node, class)) = &u.failure {
            sqlx::query(SET_FAILED_NODE).bind(node).bind(class).bind(id).execute(&mut *conn).await?;
            PHASES.statement();
        }
        sqlx::query(UPDATE_INSTANCE)
            .bind(u.status)
            .bind(u.output.as_ref().map(Json))
            .bind(&u.error)
            .bind(u.started_at)
            .bind(u.ended_at)
            .bind(id)
            .bind(bump)
            .execute(&mut *conn)
            .await?;
        PHASES.statement();
        Ok(())
    }

    /// Writes instance rows as the batch left them (`rev` one past the one they were read or
    /// remembered with, and only where it still is that one), in one statement. `guard`: the
    /// write is kept only if every row was (`Sink::close_returning`).
    pub(super) async fn write_instance_rows<'a>(
        conn: &mut Conn,
        sink: &mut Sink<'a>,
        rows: &[&'a InstanceRow],
        guard: bool,
    ) -> Result<()> {
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let sql = sink.open();
            sql.push(UPDATE_INSTANCE_ROWS);
            sql.push_values(chunk.iter(), |mut v, row| {
                v.push_bind(row.id)
                    .push_bind(row.status)
                    .push_bind(&row.output)
                    .push_bind(&row.error)
                    .push_bind(row.started_at)
                    .push_bind(row.ended_at)
                    .push_bind(row.rev)
                    .push_bind(row.rev - 1);
            });
            sql.push(UPDATE_INSTANCE_ROWS_TAIL);
            match guard {
                true => sink.close_returning(chunk.len() * 8, chunk.len())?,
                false => sink.close(conn, chunk.len() * 8).await?,
            }
        }
        Ok(())
    }

    /// Writes the rows of the instances the batch changed (`written`, each one `rev` past the
    /// one it was locked with). A restart or a failure also writes columns the snapshot does
    /// not hold: those updates are sent first, one by one, in order, at once; then every
    /// written instance's final row (`snapshots`, as `absorb` left them) goes to `sink` as
    /// one statement.
    pub(super) async fn write_instance_updates<'a>(
        conn: &mut Conn,
        sink: &mut Sink<'a>,
        updates: &[(Uuid, InstanceUpdate)],
        snapshots: &'a HashMap<Uuid, Snapshot>,
        written: &[Uuid],
    ) -> Result<()> {
        for (id, u) in updates.iter().filter(|(_, u)| u.restart || u.failure.is_some()) {
            // Its `rev` is set with its final row, below.
            Self::write_instance(conn, *id, u, 0).await?;
        }
        let rows: Vec<&InstanceRow> = written.iter().filter_map(|id| snapshots.get(id)).map(|s| &s.instance).collect();
        if !rows.is_empty() {
            Self::write_instance_rows(conn, sink, &rows, false).await?;
        }
        Ok(())
    }

    /// Deletes the finished instances' work and the ended attempts' leftovers, then
    /// writes the node rows and inserts the new work items (into `sink`).
    pub(super) async fn write_rows<'a>(conn: &mut Conn, sink: &mut Sink<'a>, batch: &'a BatchWrites) -> Result<()> {
        if !batch.cleared.is_empty() {
            let sql = sink.open();
            sql.push(DELETE_WORK_OF_INSTANCES);
            push_binds(sql, batch.cleared.iter().copied());
            sql.push(")");
            sink.close(conn, batch.cleared.len()).await?;
        }
        if !batch.ended.is_empty() {
            let sql = sink.open();
            sql.push(DELETE_ENDED_WORK);
            for (k, (instance, node, attempt)) in batch.ended.iter().enumerate() {
                sql.push(if k == 0 { "(instance_id = " } else { " OR (instance_id = " }).push_bind(*instance);
                sql.push(" AND node_id = ").push_bind(node).push(" AND attempt = ").push_bind(*attempt).push(")");
            }
            sql.push(")");
            sink.close(conn, batch.ended.len() * 3).await?;
        }
        for chunk in batch.nodes.chunks(ROWS_PER_INSERT) {
            let sql = sink.open();
            sql.push(INSERT_NODES);
            sql.push_values(chunk, |mut v, (instance, n)| bind_node_row(&mut v, *instance, n));
            sql.push(UPSERT_NODES_TAIL);
            sink.close(conn, chunk.len() * 14).await?;
        }
        for chunk in batch.work.chunks(ROWS_PER_INSERT) {
            let sql = sink.open();
            sql.push(INSERT_WORK);
            sql.push_values(chunk, |mut v, (instance, workflow, w)| {
                let columns = w.work.columns();
                v.push_bind(w.id.unwrap_or_else(Uuid::now_v7))
                    .push_bind(*instance)
                    .push_bind(columns.kind)
                    .push_bind(columns.node_id)
                    .push_bind(columns.attempt)
                    .push_bind(columns.queue)
                    .push_bind(columns.payload.map(Json))
                    .push_bind(w.due_at)
                    .push_bind(w.lease.as_ref().map(|l| &l.0))
                    .push_bind(i64::from(w.lease.is_some()))
                    .push_bind(w.lease.as_ref().map(|l| l.1))
                    .push_bind(*workflow);
            });
            sink.close(conn, chunk.len() * 12).await?;
        }
        // A parent woken by its finishing child: one part per wake (a child ends once),
        // inserted only while the parent exists, so a purged parent never fails the
        // child's transition.
        for (parent, w) in &batch.wakes {
            let sql = sink.open();
            let columns = w.work.columns();
            sql.push(INSERT_WAKE_HEAD)
                .push_bind(w.id.unwrap_or_else(Uuid::now_v7))
                .push(", id, ")
                .push_bind(columns.kind);
            sql.push(", ").push_bind(columns.node_id).push(", ").push_bind(columns.attempt).push(", NULL, ");
            sql.push_bind(columns.payload.map(Json)).push(", ").push_bind(w.due_at);
            sql.push(INSERT_WAKE_TAIL).push_bind(*parent);
            sink.close(conn, 7).await?;
        }
        Ok(())
    }

    /// Appends each instance's new entries after its last one (its lock held) and
    /// announces them (into `sink`); returns the `seq` each instance's first new entry got.
    /// `known`: the last `seq` of instances read since their lock was granted (the others'
    /// is read here).
    pub(super) async fn write_history<'a>(
        &self,
        conn: &mut Conn,
        sink: &mut Sink<'a>,
        batch: &'a BatchWrites,
        known: &HashMap<Uuid, i64>,
    ) -> Result<HashMap<Uuid, i64>> {
        let appended: Vec<_> = batch.events.iter().filter(|(_, _, entries)| !entries.is_empty()).collect();
        if appended.is_empty() {
            return Ok(HashMap::new());
        }
        let mut last = known.clone();
        let unknown: Vec<Uuid> = appended.iter().map(|(id, _, _)| *id).filter(|id| !known.contains_key(id)).collect();
        if !unknown.is_empty() {
            let mut sql = sqlx::QueryBuilder::<Db>::new(LAST_SEQS);
            push_binds(&mut sql, unknown.iter().copied());
            sql.push(")");
            let read: Vec<(Uuid, Option<i64>)> = sql.build_query_as().keep_built().fetch_all(&mut *conn).await?;
            PHASES.statement();
            last.extend(read.into_iter().map(|(id, seq)| (id, seq.unwrap_or(0))));
        }
        let first: HashMap<Uuid, i64> =
            appended.iter().map(|(id, _, _)| (*id, last.get(id).copied().unwrap_or(0) + 1)).collect();
        let rows: Vec<(Uuid, i64, &'a NewEvent)> = appended
            .iter()
            .flat_map(|(id, _, entries)| {
                let start = first[id];
                entries.iter().enumerate().map(move |(k, e)| (*id, start + k as i64, e))
            })
            .collect();
        for chunk in rows.chunks(EVENTS_PER_INSERT) {
            let sql = sink.open();
            sql.push(INSERT_EVENTS);
            sql.push_values(chunk.iter().copied(), |mut values, (id, seq, e)| {
                values.push_bind(id).push_bind(seq).push_bind(e.kind).push_bind(e.at).push_bind(Json(&e.data));
            });
            sink.close(conn, chunk.len() * 5).await?;
        }
        if NOTIFY_EVENTS.is_some() {
            let payloads: Vec<String> = appended
                .iter()
                .map(|(id, workflow, entries)| {
                    crate::store::notice::payload(self.origin(), *id, *workflow, first[id], entries)
                })
                .collect();
            sink.announce(serde_json::Value::from(payloads).to_string());
        }
        Ok(first)
    }

    pub(super) async fn transition_batch_once(
        &self,
        steps: &[Step<'_>],
        decide: StepDecide<'_>,
    ) -> Result<Vec<TransitionOutcome>> {
        if let Some(outcomes) = self.transition_batch_remembered(steps, decide).await? {
            return Ok(outcomes);
        }
        let mut lap = Lap::start();
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        lap.lap(Phase::Begin);
        let groups = by_instance(steps);
        let ids: Vec<Uuid> = groups.iter().map(|(id, _)| *id).collect();
        let (mut snapshots, last_seq) = Self::lock_snapshots(&mut tx, &ids).await?;
        lap.lap(Phase::Lock);
        let consumed = Self::consume_fences(&mut tx, steps).await?;
        lap.lap(Phase::Fence);
        let fenced = |i: usize| steps[i].fence.is_some_and(|f| !consumed.contains(&f.work_id));
        let decided = Decided::steps(steps, &groups, &mut snapshots, fenced, decide);
        lap.lap(Phase::Decide);
        // The writes below are gathered and sent by `finish` in one call (its time is charged
        // to `History`): one statement on Postgres, one text of statements on SQLite.
        let mut sink = Sink::new();
        Self::write_instance_updates(&mut tx, &mut sink, &decided.updates, &snapshots, &decided.written).await?;
        lap.lap(Phase::Instances);
        Self::write_rows(&mut tx, &mut sink, &decided.batch).await?;
        lap.lap(Phase::Rows);
        let first_seq = self.write_history(&mut tx, &mut sink, &decided.batch, &last_seq).await?;
        sink.finish(&mut tx).await?;
        lap.lap(Phase::History);
        tx.commit().await?;
        lap.lap(Phase::Commit);
        PHASES.transaction();
        PHASES.committed(steps.len());
        self.remember(snapshots, &decided, &last_seq, &first_seq);
        Ok(decided.outcomes(steps, &first_seq))
    }
}

/// Deletes the fenced work items whose fences hold (`DELETE ... RETURNING id`).
pub(super) fn push_fenced_delete<'args>(sql: &mut sqlx::QueryBuilder<'args, Db>, fences: &[&'args Fence]) {
    sql.push(DELETE_FENCED_WORK);
    for (k, f) in fences.iter().enumerate() {
        sql.push(if k == 0 { "(id = " } else { " OR (id = " }).push_bind(f.work_id);
        sql.push(" AND lease_owner = ").push_bind(&f.owner).push(" AND lease_epoch = ").push_bind(f.epoch).push(")");
    }
    sql.push(" RETURNING id");
}

/// Binds one `instance_nodes` row: its instance, then `NODE_COLUMNS` in their order. The one
/// place that order is written out, for the batch's upsert and a retry's rewrite alike.
pub(super) fn bind_node_row<'args>(
    v: &mut sqlx::query_builder::Separated<'_, 'args, Db, &'static str>,
    instance: Uuid,
    n: &'args NodeRow,
) {
    v.push_bind(instance)
        .push_bind(&n.node_id)
        .push_bind(n.position)
        .push_bind(n.status)
        .push_bind(n.attempts)
        .push_bind(&n.outcome)
        .push_bind(&n.output)
        .push_bind(&n.error)
        .push_bind(n.started_at)
        .push_bind(n.ended_at)
        .push_bind(n.dispatched_at)
        .push_bind(n.wait_kind)
        .push_bind(n.wait_started_at);
}
