//! `instances.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::sink::Sink;
use super::KeepBuilt;
use super::{push_binds, Store};
use crate::store::backend::Backend;
use crate::store::batch::{BatchWrites, Step, StepDecide};
use crate::store::instances::{
    CHILDREN, COUNT_INSTANCES, COUNT_TIMERS, EVENTS_AFTER, FAILURE_HANDLER, INSTANCE, INSTANCES, INSTANCE_VERSIONS_OF,
    QUEUED_PER_WORKFLOW, SNAPSHOT_NODES, WORKFLOWS_WITH_QUEUED,
};
use crate::store::phases::PHASES;
use crate::store::transitions::BUMP_REV;
use crate::store::work::Fence;
use crate::store::InstanceQuery;
use crate::store::Recalled;
use crate::store::{
    AdmissionLimits, ChildRow, EngineGauges, InstanceRow, NewEvent, NewInstance, NodeRow, PoolStats, Refusable,
    Snapshot, StartOutcome, StoredEvent, TransitionOutcome, Writes,
};
use crate::store::{AdmitDecide, Decide, Result, RetryDecide};
use const_format::concatcp;
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;
type Db = <Store as Backend>::Db;
const LOCK_ROW: &str = <Store as Backend>::LOCK_ROW;
/// An instance's row, locked for the transaction that changes it.
const LOCK_INSTANCE: &str = concatcp!(INSTANCE, LOCK_ROW);

impl Store {
    pub(super) async fn load_snapshot(
        tx: &mut sqlx::Transaction<'_, Db>,
        id: Uuid,
        lock: bool,
    ) -> Result<Option<Snapshot>> {
        let sql = if lock { LOCK_INSTANCE } else { INSTANCE };
        let Some(instance) = sqlx::query_as::<_, InstanceRow>(sql).bind(id).fetch_optional(&mut **tx).await? else {
            return Ok(None);
        };
        let nodes: Vec<NodeRow> = sqlx::query_as(SNAPSHOT_NODES).bind(id).fetch_all(&mut **tx).await?;
        Ok(Some(Snapshot { instance, nodes: nodes.into_iter().map(Arc::new).collect() }))
    }

    /// Writes the first entries of a new instance's history (none before them: no need to
    /// read its last `seq`) and announces them to other processes.
    pub(super) async fn append_first_events(
        &self,
        tx: &mut sqlx::Transaction<'_, Db>,
        id: Uuid,
        workflow: Uuid,
        events: &[NewEvent],
    ) -> Result<()> {
        let mut batch = BatchWrites::default();
        batch.add(id, workflow, &Writes { events: events.to_vec(), ..Writes::default() });
        let mut sink = Sink::new();
        self.write_history(tx, &mut sink, &batch, &HashMap::from([(id, 0)])).await?;
        sink.finish(tx).await
    }

    /// One transition's writes, as a batch of one writes them (`transitions.rs`), and one
    /// more `rev` (whoever remembers the instance reads it again).
    pub(super) async fn apply_writes(
        &self,
        tx: &mut sqlx::Transaction<'_, Db>,
        id: Uuid,
        workflow: Uuid,
        w: &mut Writes,
    ) -> Result<()> {
        match &w.instance {
            Some(u) => Self::write_instance(tx, id, u, 1).await?,
            None => {
                sqlx::query(BUMP_REV).bind(id).execute(&mut **tx).await?;
                PHASES.statement();
            }
        }
        let mut batch = BatchWrites::default();
        batch.add(id, workflow, w);
        let mut sink = Sink::new();
        Self::write_rows(tx, &mut sink, &batch).await?;
        let first = self.write_history(tx, &mut sink, &batch, &Default::default()).await?.get(&id).copied();
        sink.finish(tx).await?;
        w.first_seq = first;
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::store::InstanceStore for Store {
    async fn start_instance(&self, new: &NewInstance) -> Result<StartOutcome> {
        crate::store::retry_transient(|| self.start_instance_once(new)).await
    }

    async fn start_instances(&self, news: &[&NewInstance]) -> Result<Vec<StartOutcome>> {
        crate::store::retry_transient(|| self.start_batch_once(news)).await
    }

    async fn transition(&self, id: Uuid, fence: Option<&Fence>, decide: Decide<'_>) -> Result<TransitionOutcome> {
        let steps = [Step { instance: id, fence, ahead: None }];
        let one = |_: usize, snapshot: &Snapshot| decide(snapshot);
        let mut outcomes = self.transition_batch(&steps, &one).await?;
        Ok(outcomes.pop().unwrap_or(TransitionOutcome::NotFound))
    }

    // A batch can be chosen as a deadlock victim: it runs again whole.
    async fn transition_batch(&self, steps: &[Step<'_>], decide: StepDecide<'_>) -> Result<Vec<TransitionOutcome>> {
        crate::store::retry_transient(|| self.transition_batch_once(steps, decide)).await
    }

    async fn retry_instance(
        &self,
        id: Uuid,
        limits: AdmissionLimits,
        migrate: Option<(i64, &[NodeRow])>,
        decide: RetryDecide<'_>,
    ) -> Result<Refusable<TransitionOutcome>> {
        crate::store::retry_transient(|| self.retry_instance_once(id, limits, migrate, decide)).await
    }

    async fn admit_queued(
        &self,
        workflow: Uuid,
        limits: AdmissionLimits,
        decide: AdmitDecide<'_>,
    ) -> Result<Vec<(Uuid, Writes)>> {
        crate::store::retry_transient(|| self.admit_queued_once(workflow, limits, decide)).await
    }

    async fn workflows_with_queued(&self) -> Result<Vec<Uuid>> {
        let rows: Vec<(Uuid,)> = sqlx::query_as(WORKFLOWS_WITH_QUEUED).fetch_all(self.pool()).await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    async fn oldest_active(&self, workflow: Uuid, key: Option<&str>) -> Result<Option<Uuid>> {
        let sql = crate::store::instances::OLDEST_ACTIVE;
        Ok(sqlx::query_scalar(sql).bind(workflow).bind(key).fetch_optional(self.pool()).await?)
    }

    async fn get_instance(&self, id: Uuid) -> Result<Option<Snapshot>> {
        let mut tx = self.pool().begin().await?;
        let snapshot = Self::load_snapshot(&mut tx, id, false).await?;
        tx.commit().await?;
        Ok(snapshot)
    }

    fn remembered_instance(&self, id: Uuid) -> Option<Recalled> {
        self.snapshots().get(id)
    }

    async fn instance_versions(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Uuid, i64)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = sqlx::QueryBuilder::<Db>::new(INSTANCE_VERSIONS_OF);
        push_binds(&mut sql, ids.iter().copied());
        sql.push(")");
        Ok(sql.build_query_as().keep_built().fetch_all(self.pool()).await?)
    }

    async fn children(&self, parent: Uuid) -> Result<Vec<ChildRow>> {
        let rows = sqlx::query_as(CHILDREN).bind(parent).fetch_all(self.pool()).await?;
        Ok(rows)
    }

    async fn failure_handler(&self, failed: Uuid) -> Result<Option<(Uuid, Uuid)>> {
        Ok(sqlx::query_as(FAILURE_HANDLER).bind(failed).fetch_optional(self.pool()).await?)
    }

    async fn list_instances(&self, q: &InstanceQuery) -> Result<Vec<InstanceRow>> {
        let mut sql = sqlx::QueryBuilder::<Db>::new(INSTANCES);
        q.push_where(&mut sql);
        sql.push(" ORDER BY id DESC LIMIT ").push_bind(q.limit);
        Ok(sql.build_query_as().keep_built().fetch_all(self.pool()).await?)
    }

    async fn events_after(&self, instance: Uuid, after: i64, limit: i64) -> Result<Vec<StoredEvent>> {
        Ok(sqlx::query_as(EVENTS_AFTER).bind(instance).bind(after).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<crate::store::notice::Notice>>> {
        self.listen_for_notices().await
    }

    async fn engine_gauges(&self) -> Result<EngineGauges> {
        let queued: Vec<(Uuid, i64)> = sqlx::query_as(QUEUED_PER_WORKFLOW).fetch_all(self.pool()).await?;
        let (timers,): (i64,) = sqlx::query_as(COUNT_TIMERS).fetch_one(self.pool()).await?;
        let pool = PoolStats {
            size: self.pool().size(),
            idle: self.pool().num_idle() as u32,
            max: self.pool().options().get_max_connections(),
        };
        let (snapshots, snapshot_bytes) = self.snapshots().held();
        Ok(EngineGauges { queued_by_workflow: queued, pending_timers: timers, pool, snapshots, snapshot_bytes })
    }

    async fn count_instances(&self, q: &InstanceQuery) -> Result<Vec<(trellis_model::InstanceStatus, i64)>> {
        let mut sql = sqlx::QueryBuilder::<Db>::new(COUNT_INSTANCES);
        q.push_where(&mut sql);
        sql.push(" GROUP BY status");
        Ok(sql.build_query_as().keep_built().fetch_all(self.pool()).await?)
    }
}
