//! The engine's SQL, shared by both backends like `sql.rs`. Two dialect differences come
//! from each backend's `Backend` impl: `LOCK_ROW` (`FOR NO KEY UPDATE` on Postgres: the
//! per-instance and per-workflow locks that make transitions and admission safe across
//! processes) and `SKIP_LOCKED` (claims skip rows another process is claiming). SQLite has one
//! process, whose write transactions are serialized by the store's `write_guard`.

pub(super) const INSTANCE_COLUMNS: &str =
    "id, workflow_id, version, status, input, output, error, business_key, created_at, started_at, ended_at, trace_id, parent_span_id, run";
pub(super) const NODE_COLUMNS: &str =
    "node_id, position, status, attempts, outcome, output, error, started_at, ended_at, dispatched_at, wait_kind, wait_started_at";
/// History rows per INSERT: 5 binds each keeps a statement far below both backends' limits.
pub(super) const EVENTS_PER_INSERT: usize = 1_000;
pub(super) const WORK_COLUMNS: &str =
    "id, instance_id, kind, node_id, attempt, queue, payload, due_at, lease_owner, lease_epoch, lease_expires_at";

macro_rules! impl_instance_store {
    ($store:ty) => {
        const _: () = {
            use $crate::store::backend::Backend;
            use $crate::store::engine_records::{EngineGauges, Fence, InstanceRow, NewEvent, NewInstance, NodeRow, PoolStats, Snapshot, StartOutcome, StoredEvent, TransitionOutcome, Writes};
            use $crate::store::engine_sql::{EVENTS_PER_INSERT, INSTANCE_COLUMNS, NODE_COLUMNS};
            use $crate::store::InstanceQuery;
            use $crate::store::{Decide, Result, RetryDecide};
            use sqlx::types::Json;
            use uuid::Uuid;
            type Db = <$store as Backend>::Db;
            const LOCK_ROW: &str = <$store as Backend>::LOCK_ROW;
            const NOTIFY_EVENTS: Option<&str> = <$store as Backend>::NOTIFY_EVENTS;

            impl $store {
                async fn load_snapshot(tx: &mut sqlx::Transaction<'_, Db>, id: Uuid, lock: bool) -> Result<Option<Snapshot>> {
                    let suffix = if lock { LOCK_ROW } else { "" };
                    let sql = format!("SELECT {INSTANCE_COLUMNS} FROM instances WHERE id = $1{suffix}");
                    let Some(instance) = sqlx::query_as::<_, InstanceRow>(&sql).bind(id).fetch_optional(&mut **tx).await? else {
                        return Ok(None);
                    };
                    let sql = format!("SELECT {NODE_COLUMNS} FROM instance_nodes WHERE instance_id = $1 ORDER BY position");
                    let nodes = sqlx::query_as(&sql).bind(id).fetch_all(&mut **tx).await?;
                    Ok(Some(Snapshot { instance, nodes }))
                }

                /// Appends `events` to the instance's history (its lock held) and announces them to
                /// other processes; returns the first one's `seq`.
                async fn append_events(&self, tx: &mut sqlx::Transaction<'_, Db>, id: Uuid, workflow: Uuid, events: &[NewEvent]) -> Result<Option<i64>> {
                    if events.is_empty() {
                        return Ok(None);
                    }
                    let (last,): (i64,) = sqlx::query_as("SELECT COALESCE(MAX(seq), 0) FROM instance_events WHERE instance_id = $1")
                        .bind(id).fetch_one(&mut **tx).await?;
                    let first = last + 1;
                    for (chunk_no, chunk) in events.chunks(EVENTS_PER_INSERT).enumerate() {
                        let offset = first + (chunk_no * EVENTS_PER_INSERT) as i64;
                        let mut insert = sqlx::QueryBuilder::<Db>::new("INSERT INTO instance_events (instance_id, seq, kind, at, data) ");
                        insert.push_values(chunk.iter().enumerate(), |mut values, (k, e)| {
                            values.push_bind(id).push_bind(offset + k as i64).push_bind(e.kind).push_bind(e.at).push_bind(Json(&e.data));
                        });
                        insert.build().execute(&mut **tx).await?;
                    }
                    if let Some(sql) = NOTIFY_EVENTS {
                        let payload = $crate::store::notice::payload(self.origin(), id, workflow, first, events);
                        sqlx::query(sql).bind(payload).execute(&mut **tx).await?;
                    }
                    Ok(Some(first))
                }

                async fn apply_writes(&self, tx: &mut sqlx::Transaction<'_, Db>, id: Uuid, workflow: Uuid, w: &mut Writes) -> Result<()> {
                    if w.instance.as_ref().is_some_and(|u| u.restart) {
                        sqlx::query("UPDATE instances SET run = run + 1, output = NULL, error = NULL, failed_node = NULL, error_class = NULL, \
                                      started_at = NULL, ended_at = NULL WHERE id = $1")
                            .bind(id).execute(&mut **tx).await?;
                    }
                    if let Some((node, class)) = w.instance.as_ref().and_then(|u| u.failure.as_ref()) {
                        sqlx::query("UPDATE instances SET failed_node = $1, error_class = $2 WHERE id = $3")
                            .bind(node).bind(class).bind(id).execute(&mut **tx).await?;
                    }
                    if let Some(u) = &w.instance {
                        sqlx::query(
                            "UPDATE instances SET status = $1, output = COALESCE($2, output), error = COALESCE($3, error), \
                             started_at = COALESCE(started_at, $4), ended_at = COALESCE($5, ended_at) WHERE id = $6",
                        )
                        .bind(&u.status).bind(u.output.as_ref().map(Json)).bind(&u.error).bind(u.started_at).bind(u.ended_at).bind(id)
                        .execute(&mut **tx).await?;
                    }
                    for n in &w.nodes {
                        sqlx::query(
                            "UPDATE instance_nodes SET status = $1, attempts = $2, outcome = $3, output = $4, error = $5, \
                             started_at = $6, ended_at = $7, dispatched_at = $8, wait_kind = $9, wait_started_at = $10 \
                             WHERE instance_id = $11 AND node_id = $12",
                        )
                        .bind(&n.status).bind(n.attempts).bind(&n.outcome).bind(&n.output).bind(&n.error)
                        .bind(n.started_at).bind(n.ended_at).bind(n.dispatched_at).bind(&n.wait_kind).bind(n.wait_started_at)
                        .bind(id).bind(&n.node_id)
                        .execute(&mut **tx).await?;
                    }
                    for (node, attempt) in &w.ended_attempts {
                        sqlx::query("DELETE FROM work WHERE instance_id = $1 AND node_id = $2 AND attempt = $3 AND kind <> 'retry'")
                            .bind(id).bind(node).bind(attempt).execute(&mut **tx).await?;
                    }
                    if w.clear_work {
                        sqlx::query("DELETE FROM work WHERE instance_id = $1").bind(id).execute(&mut **tx).await?;
                    }
                    for work in &w.new_work {
                        sqlx::query(
                            "INSERT INTO work (id, instance_id, kind, node_id, attempt, queue, payload, due_at, \
                             lease_owner, lease_epoch, lease_expires_at, workflow_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                        )
                        .bind(work.id.unwrap_or_else(Uuid::now_v7)).bind(id).bind(&work.kind).bind(&work.node_id).bind(work.attempt)
                        .bind(&work.queue).bind(work.payload.as_ref().map(Json)).bind(work.due_at)
                        .bind(work.lease.as_ref().map(|l| &l.0)).bind(i64::from(work.lease.is_some()))
                        .bind(work.lease.as_ref().map(|l| l.1)).bind(workflow)
                        .execute(&mut **tx).await?;
                    }
                    w.first_seq = self.append_events(tx, id, workflow, &w.events).await?;
                    Ok(())
                }

                // The transaction below can be chosen as a deadlock victim; its trait method
                // runs it through `retry_transient` (the admission ones are in `admission_sql.rs`).
                async fn transition_once(&self, id: Uuid, fence: Option<&Fence>, decide: Decide<'_>) -> Result<TransitionOutcome> {
                    let _guard = self.write_guard().await;
                    let mut tx = self.pool().begin().await?;
                    // The instance lock comes first, always: a transition that clears the instance's
                    // work must never wait for a work row held by one waiting for the instance.
                    let Some(snapshot) = Self::load_snapshot(&mut tx, id, true).await? else {
                        return Ok(TransitionOutcome::NotFound);
                    };
                    if let Some(f) = fence {
                        let done = sqlx::query("DELETE FROM work WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3")
                            .bind(f.work_id).bind(&f.owner).bind(f.epoch).execute(&mut *tx).await?;
                        if done.rows_affected() == 0 {
                            return Ok(TransitionOutcome::Fenced);
                        }
                    }
                    let mut writes = decide(&snapshot);
                    self.apply_writes(&mut tx, id, snapshot.instance.workflow_id, &mut writes).await?;
                    tx.commit().await?;
                    Ok(if writes.is_empty() { TransitionOutcome::Unchanged } else { TransitionOutcome::Applied(Box::new(writes)) })
                }
            }

            #[async_trait::async_trait]
            impl $crate::store::InstanceStore for $store {
                async fn start_instance(&self, new: &NewInstance) -> Result<StartOutcome> {
                    $crate::store::retry_transient(|| self.start_instance_once(new)).await
                }

                async fn transition(&self, id: Uuid, fence: Option<&Fence>, decide: Decide<'_>) -> Result<TransitionOutcome> {
                    $crate::store::retry_transient(|| self.transition_once(id, fence, decide)).await
                }

                async fn retry_instance(
                    &self,
                    id: Uuid,
                    limit: Option<u32>,
                    reject_over_limit: bool,
                    migrate: Option<(i64, &[NodeRow])>,
                    decide: RetryDecide<'_>,
                ) -> Result<Option<TransitionOutcome>> {
                    $crate::store::retry_transient(|| self.retry_instance_once(id, limit, reject_over_limit, migrate, decide)).await
                }

                async fn admit_queued(&self, workflow: Uuid, limit: Option<u32>, decide: Decide<'_>) -> Result<Vec<(Uuid, Writes)>> {
                    $crate::store::retry_transient(|| self.admit_queued_once(workflow, limit, decide)).await
                }

                async fn workflows_with_queued(&self) -> Result<Vec<Uuid>> {
                    let rows: Vec<(Uuid,)> = sqlx::query_as("SELECT DISTINCT workflow_id FROM instances WHERE status = 'queued'")
                        .fetch_all(self.pool()).await?;
                    Ok(rows.into_iter().map(|(id,)| id).collect())
                }

                async fn get_instance(&self, id: Uuid) -> Result<Option<Snapshot>> {
                    let mut tx = self.pool().begin().await?;
                    let snapshot = Self::load_snapshot(&mut tx, id, false).await?;
                    tx.commit().await?;
                    Ok(snapshot)
                }

                async fn list_instances(&self, q: &InstanceQuery) -> Result<Vec<InstanceRow>> {
                    let mut sql = sqlx::QueryBuilder::<Db>::new(format!("SELECT {INSTANCE_COLUMNS} FROM instances"));
                    q.push_where(&mut sql);
                    sql.push(" ORDER BY id DESC LIMIT ").push_bind(q.limit);
                    Ok(sql.build_query_as().fetch_all(self.pool()).await?)
                }

                async fn events_after(&self, instance: Uuid, after: i64, limit: i64) -> Result<Vec<StoredEvent>> {
                    Ok(sqlx::query_as(
                        "SELECT seq, kind, at, data FROM instance_events WHERE instance_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                    )
                    .bind(instance).bind(after).bind(limit).fetch_all(self.pool()).await?)
                }

                async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<$crate::store::notice::Notice>>> {
                    self.listen_for_notices().await
                }

                async fn engine_gauges(&self) -> Result<EngineGauges> {
                    let queued: Vec<(Uuid, i64)> = sqlx::query_as(
                        "SELECT workflow_id, COUNT(*) FROM instances WHERE status = 'queued' GROUP BY workflow_id",
                    ).fetch_all(self.pool()).await?;
                    let (timers,): (i64,) = sqlx::query_as(
                        "SELECT COUNT(*) FROM work WHERE kind IN ('resume', 'retry', 'node_timeout', 'instance_timeout')",
                    ).fetch_one(self.pool()).await?;
                    let pool = PoolStats { size: self.pool().size(), idle: self.pool().num_idle() as u32, max: self.pool().options().get_max_connections() };
                    Ok(EngineGauges { queued_by_workflow: queued, pending_timers: timers, pool })
                }

                async fn count_instances(&self, q: &InstanceQuery) -> Result<Vec<(trellis_model::InstanceStatus, i64)>> {
                    let mut sql = sqlx::QueryBuilder::<Db>::new("SELECT status, COUNT(*) FROM instances");
                    q.push_where(&mut sql);
                    sql.push(" GROUP BY status");
                    Ok(sql.build_query_as().fetch_all(self.pool()).await?)
                }
            }
        };
    };
}

pub(super) use impl_instance_store;
