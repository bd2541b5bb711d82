//! The engine's SQL, shared by both backends like `sql.rs`. Two dialect differences are
//! supplied by each backend module: `LOCK_ROW` (`FOR UPDATE` on Postgres: the per-instance
//! and per-workflow locks that make transitions and admission safe across processes) and
//! `SKIP_LOCKED` (claims skip rows another process is claiming). SQLite has one process,
//! whose write transactions are serialized by the store's `write_guard`.

pub(super) const INSTANCE_COLUMNS: &str =
    "id, workflow_id, version, status, input, output, error, business_key, created_at, started_at, ended_at, trace_id, parent_span_id, run";
pub(super) const NODE_COLUMNS: &str =
    "node_id, position, status, attempts, outcome, output, error, started_at, ended_at, dispatched_at, wait_kind, wait_started_at";
/// History rows per INSERT: 5 binds each keeps a statement far below both backends' limits.
pub(super) const EVENTS_PER_INSERT: usize = 1_000;
pub(super) const WORK_COLUMNS: &str =
    "id, instance_id, kind, node_id, attempt, queue, payload, due_at, lease_owner, lease_epoch, lease_expires_at";
pub(super) const ACTIVE: &str = "('running', 'paused')";

macro_rules! impl_instance_store {
    ($store:ty, $db:ty) => {
        impl $store {
            async fn load_snapshot(tx: &mut sqlx::Transaction<'_, $db>, id: Uuid, lock: bool) -> Result<Option<Snapshot>> {
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
            async fn append_events(&self, tx: &mut sqlx::Transaction<'_, $db>, id: Uuid, workflow: Uuid, events: &[NewEvent]) -> Result<Option<i64>> {
                if events.is_empty() {
                    return Ok(None);
                }
                let (last,): (i64,) = sqlx::query_as("SELECT COALESCE(MAX(seq), 0) FROM instance_events WHERE instance_id = $1")
                    .bind(id).fetch_one(&mut **tx).await?;
                let first = last + 1;
                for (chunk_no, chunk) in events.chunks(EVENTS_PER_INSERT).enumerate() {
                    let offset = first + (chunk_no * EVENTS_PER_INSERT) as i64;
                    let mut insert = sqlx::QueryBuilder::<$db>::new("INSERT INTO instance_events (instance_id, seq, kind, at, data) ");
                    insert.push_values(chunk.iter().enumerate(), |mut values, (k, e)| {
                        values.push_bind(id).push_bind(offset + k as i64).push_bind(e.kind).push_bind(e.at).push_bind(Json(&e.data));
                    });
                    insert.build().execute(&mut **tx).await?;
                }
                if let Some(sql) = NOTIFY_EVENTS {
                    let payload = $crate::store::notice::payload(self.origin, id, workflow, first, events);
                    sqlx::query(sql).bind(payload).execute(&mut **tx).await?;
                }
                Ok(Some(first))
            }

            async fn apply_writes(&self, tx: &mut sqlx::Transaction<'_, $db>, id: Uuid, workflow: Uuid, w: &mut Writes) -> Result<()> {
                if w.instance.as_ref().is_some_and(|u| u.restart) {
                    sqlx::query("UPDATE instances SET run = run + 1, output = NULL, error = NULL, started_at = NULL, ended_at = NULL WHERE id = $1")
                        .bind(id).execute(&mut **tx).await?;
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

            async fn active_count(tx: &mut sqlx::Transaction<'_, $db>, workflow: Uuid) -> Result<i64> {
                let sql = format!("SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status IN {ACTIVE}");
                let (n,): (i64,) = sqlx::query_as(&sql).bind(workflow).fetch_one(&mut **tx).await?;
                Ok(n)
            }

            /// Whether `workflow` has a concurrency slot for one more instance, holding its lock:
            /// nothing queued (FIFO: a start or retry never overtakes instances already waiting)
            /// and fewer than `limit` active.
            async fn slot_free(tx: &mut sqlx::Transaction<'_, $db>, workflow: Uuid, limit: u32) -> Result<bool> {
                Self::lock_workflow(tx, workflow).await?;
                let (queued,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status = 'queued'")
                    .bind(workflow).fetch_one(&mut **tx).await?;
                Ok(queued == 0 && Self::active_count(tx, workflow).await? < i64::from(limit))
            }

            /// Whether the key-reuse policy refuses `key` because of an earlier instance.
            /// It holds the workflow lock, so two starts cannot both find no earlier one.
            async fn key_refusal(
                tx: &mut sqlx::Transaction<'_, $db>,
                workflow: Uuid,
                key: &str,
                policy: trellis_model::KeyReuse,
            ) -> Result<Option<StartOutcome>> {
                use trellis_model::KeyReuse;
                let only = match policy {
                    KeyReuse::AllowDuplicate | KeyReuse::TerminateIfRunning => return Ok(None),
                    KeyReuse::RejectDuplicate => "",
                    KeyReuse::AllowDuplicateFailedOnly => " AND status = 'succeeded'",
                };
                Self::lock_workflow(tx, workflow).await?;
                let sql = format!("SELECT id, status FROM instances WHERE workflow_id = $1 AND business_key = $2{only} ORDER BY id DESC LIMIT 1");
                let earlier: Option<(Uuid, String)> = sqlx::query_as(&sql).bind(workflow).bind(key).fetch_optional(&mut **tx).await?;
                Ok(earlier.map(|(id, status)| StartOutcome::KeyUsed { id, status }))
            }

            /// The live instance holding `key`, if there still is one.
            async fn live_with_key(&self, workflow: Uuid, key: Option<&str>) -> Result<Option<Uuid>> {
                let sql = format!(
                    "SELECT id FROM instances WHERE workflow_id = $1 AND business_key = $2 AND status IN {}",
                    $crate::store::ops_sql::UNFINISHED
                );
                let live: Option<(Uuid,)> = sqlx::query_as(&sql).bind(workflow).bind(key).fetch_optional(&self.pool).await?;
                Ok(live.map(|(id,)| id))
            }

            async fn lock_workflow(tx: &mut sqlx::Transaction<'_, $db>, workflow: Uuid) -> Result<()> {
                let sql = format!("SELECT id FROM workflows WHERE id = $1{LOCK_ROW}");
                sqlx::query(&sql).bind(workflow).fetch_optional(&mut **tx).await?;
                Ok(())
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::InstanceStore for $store {
            async fn start_instance(&self, new: &NewInstance) -> Result<StartOutcome> {
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
                let row = &new.row;
                if let Some((key, hash)) = &new.idempotency {
                    // First, so a concurrent start with the same key waits on this row and then
                    // finds it, and a repeated request is answered before any limit is checked.
                    let claimed = sqlx::query(
                        "INSERT INTO start_requests (workflow_id, idempotency_key, request_hash, instance_id, status, version, created_at) \
                         VALUES ($1, $2, $3, $4, 'queued', $5, $6) ON CONFLICT (workflow_id, idempotency_key) DO NOTHING",
                    )
                    .bind(row.workflow_id).bind(key).bind(hash).bind(row.id).bind(row.version).bind(row.created_at)
                    .execute(&mut *tx).await?;
                    if claimed.rows_affected() == 0 {
                        let first: StoredStart = sqlx::query_as(
                            "SELECT request_hash, instance_id, status, version FROM start_requests WHERE workflow_id = $1 AND idempotency_key = $2",
                        )
                        .bind(row.workflow_id).bind(key).fetch_one(&mut *tx).await?;
                        return Ok(StartOutcome::Repeated(first));
                    }
                }
                if let Some(key) = &row.business_key {
                    if let Some(refused) = Self::key_refusal(&mut tx, row.workflow_id, key, new.key_reuse).await? {
                        return Ok(refused);
                    }
                }
                let mut outcome = StartOutcome::Running;
                if let Some(limit) = new.limit {
                    if !Self::slot_free(&mut tx, row.workflow_id, limit).await? {
                        outcome = if new.reject_over_limit { StartOutcome::Rejected } else { StartOutcome::Queued };
                    }
                }
                if outcome == StartOutcome::Rejected {
                    return Ok(outcome);
                }
                let sql = format!("INSERT INTO instances ({INSTANCE_COLUMNS}) VALUES ($1, $2, $3, 'queued', $4, NULL, NULL, $5, $6, NULL, NULL, $7, $8, 1)");
                let inserted = sqlx::query(&sql)
                    .bind(row.id).bind(row.workflow_id).bind(row.version).bind(&row.input).bind(&row.business_key).bind(row.created_at)
                    .bind(&row.trace_id).bind(&row.parent_span_id)
                    .execute(&mut *tx).await;
                match inserted.map_err(StoreError::from_sqlx) {
                    // The id is fresh, so the only unique rule this can break is one live
                    // instance per key (`instances_one_live_per_key`).
                    Err(StoreError::Conflict(_)) if row.business_key.is_some() => {
                        drop(tx);
                        return Ok(StartOutcome::KeyLive(self.live_with_key(row.workflow_id, row.business_key.as_deref()).await?));
                    }
                    other => {
                        other?;
                    }
                }
                // One statement for all nodes (at most 1,000, well under both bind limits).
                let mut insert = sqlx::QueryBuilder::<$db>::new("INSERT INTO instance_nodes (instance_id, node_id, position, status, attempts) ");
                insert.push_values(&new.nodes, |mut values, n| {
                    values.push_bind(row.id).push_bind(&n.node_id).push_bind(n.position).push_bind(&n.status).push_bind(0i32);
                });
                insert.build().execute(&mut *tx).await?;
                // The history starts at 1: creation, then waiting in the queue or admission.
                let mut on_admit = new.on_admit.clone();
                let mut events = new.created_events.clone();
                if outcome == StartOutcome::Running {
                    events.append(&mut on_admit.events);
                    self.apply_writes(&mut tx, row.id, row.workflow_id, &mut on_admit).await?;
                } else {
                    events.extend(new.queued_events.iter().cloned());
                }
                self.append_events(&mut tx, row.id, row.workflow_id, &events).await?;
                if let (Some((key, _)), StartOutcome::Running) = (&new.idempotency, &outcome) {
                    sqlx::query("UPDATE start_requests SET status = 'running' WHERE workflow_id = $1 AND idempotency_key = $2")
                        .bind(row.workflow_id).bind(key).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(outcome)
            }

            async fn transition(&self, id: Uuid, fence: Option<&Fence>, decide: Decide<'_>) -> Result<TransitionOutcome> {
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
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

            async fn retry_instance(
                &self,
                id: Uuid,
                limit: Option<u32>,
                reject_over_limit: bool,
                migrate: Option<(i64, &[NodeRow])>,
                decide: RetryDecide<'_>,
            ) -> Result<Option<TransitionOutcome>> {
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
                let Some(peek) = Self::load_snapshot(&mut tx, id, false).await? else {
                    return Ok(Some(TransitionOutcome::NotFound));
                };
                let workflow = peek.instance.workflow_id;
                let mut admit = true;
                if let Some(limit) = limit {
                    // Workflow lock, then instance lock: the order admission takes them in.
                    admit = Self::slot_free(&mut tx, workflow, limit).await?;
                    if !admit && reject_over_limit {
                        return Ok(None);
                    }
                }
                let Some(mut snapshot) = Self::load_snapshot(&mut tx, id, true).await? else {
                    return Ok(Some(TransitionOutcome::NotFound));
                };
                if let Some((version, nodes)) = migrate {
                    // Rolled back with the rest if `decide` finds the retry does not apply.
                    sqlx::query("UPDATE instances SET version = $1 WHERE id = $2").bind(version).bind(id).execute(&mut *tx).await?;
                    sqlx::query("DELETE FROM instance_nodes WHERE instance_id = $1").bind(id).execute(&mut *tx).await?;
                    let mut insert = sqlx::QueryBuilder::<$db>::new(format!("INSERT INTO instance_nodes (instance_id, {NODE_COLUMNS}) "));
                    insert.push_values(nodes, |mut v, n| {
                        v.push_bind(id).push_bind(&n.node_id).push_bind(n.position).push_bind(&n.status).push_bind(n.attempts)
                            .push_bind(&n.outcome).push_bind(&n.output).push_bind(&n.error).push_bind(n.started_at).push_bind(n.ended_at)
                            .push_bind(n.dispatched_at).push_bind(&n.wait_kind).push_bind(n.wait_started_at);
                    });
                    insert.build().execute(&mut *tx).await?;
                    snapshot = Self::load_snapshot(&mut tx, id, true).await?.ok_or(StoreError::Conflict("instance".into()))?;
                }
                let mut writes = decide(&snapshot, admit);
                if writes.is_empty() {
                    return Ok(Some(TransitionOutcome::Unchanged));
                }
                self.apply_writes(&mut tx, id, workflow, &mut writes).await.map_err(|e| match e {
                    StoreError::Database(e) => StoreError::from_sqlx(e),
                    e => e,
                })?;
                tx.commit().await?;
                Ok(Some(TransitionOutcome::Applied(Box::new(writes))))
            }

            async fn admit_queued(&self, workflow: Uuid, limit: Option<u32>, decide: Decide<'_>) -> Result<Vec<(Uuid, Writes)>> {
                let _guard = self.write_guard().await;
                let mut tx = self.pool.begin().await?;
                Self::lock_workflow(&mut tx, workflow).await?;
                let free = match limit {
                    Some(limit) => (i64::from(limit) - Self::active_count(&mut tx, workflow).await?).max(0),
                    None => i64::MAX,
                };
                let ids: Vec<(Uuid,)> = sqlx::query_as("SELECT id FROM instances WHERE workflow_id = $1 AND status = 'queued' ORDER BY id LIMIT $2")
                    .bind(workflow).bind(free.min(1_000)).fetch_all(&mut *tx).await?;
                let mut admitted = Vec::with_capacity(ids.len());
                for (id,) in ids {
                    // Locked and re-read: a cancel may have got there first.
                    if let Some(snapshot) = Self::load_snapshot(&mut tx, id, true).await? {
                        let mut writes = decide(&snapshot);
                        self.apply_writes(&mut tx, id, workflow, &mut writes).await?;
                        admitted.push((id, writes));
                    }
                }
                tx.commit().await?;
                Ok(admitted)
            }

            async fn workflows_with_queued(&self) -> Result<Vec<Uuid>> {
                let rows: Vec<(Uuid,)> = sqlx::query_as("SELECT DISTINCT workflow_id FROM instances WHERE status = 'queued'")
                    .fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(|(id,)| id).collect())
            }

            async fn get_instance(&self, id: Uuid) -> Result<Option<Snapshot>> {
                let mut tx = self.pool.begin().await?;
                let snapshot = Self::load_snapshot(&mut tx, id, false).await?;
                tx.commit().await?;
                Ok(snapshot)
            }

            async fn list_instances(&self, q: &InstanceQuery) -> Result<Vec<InstanceRow>> {
                let sql = format!(
                    "SELECT {INSTANCE_COLUMNS} FROM instances WHERE {FILTER} AND ($7 IS NULL OR id < $7) ORDER BY id DESC LIMIT $8"
                );
                Ok(bind_filter!(sqlx::query_as(&sql), q).bind(q.before).bind(q.limit).fetch_all(&self.pool).await?)
            }

            async fn events_after(&self, instance: Uuid, after: i64, limit: i64) -> Result<Vec<StoredEvent>> {
                Ok(sqlx::query_as(
                    "SELECT seq, kind, at, data FROM instance_events WHERE instance_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                )
                .bind(instance).bind(after).bind(limit).fetch_all(&self.pool).await?)
            }

            async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<$crate::store::notice::Notice>>> {
                self.listen_for_notices().await
            }

            async fn engine_gauges(&self) -> Result<EngineGauges> {
                let queued: Vec<(Uuid, i64)> = sqlx::query_as(
                    "SELECT workflow_id, COUNT(*) FROM instances WHERE status = 'queued' GROUP BY workflow_id",
                ).fetch_all(&self.pool).await?;
                let (timers,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM work WHERE kind IN ('resume', 'retry', 'node_timeout', 'instance_timeout')",
                ).fetch_one(&self.pool).await?;
                let pool = PoolStats { size: self.pool.size(), idle: self.pool.num_idle() as u32, max: self.pool.options().get_max_connections() };
                Ok(EngineGauges { queued_by_workflow: queued, pending_timers: timers, pool })
            }

            async fn count_instances(&self, q: &InstanceQuery) -> Result<Vec<(String, i64)>> {
                let sql = format!("SELECT status, COUNT(*) FROM instances WHERE {FILTER} GROUP BY status");
                Ok(bind_filter!(sqlx::query_as(&sql), q).fetch_all(&self.pool).await?)
            }
        }
    };
}

/// The list filter's conditions; `$1`..`$6` are bound by `bind_filter!`.
pub(super) const FILTER: &str = "($1 IS NULL OR workflow_id = $1) AND ($2 IS NULL OR status = $2) \
     AND ($3 IS NULL OR version = $3) AND ($4 IS NULL OR business_key = $4) \
     AND ($5 IS NULL OR created_at >= $5) AND ($6 IS NULL OR created_at < $6)";

macro_rules! bind_filter {
    ($query:expr, $q:expr) => {
        $query.bind($q.workflow).bind(&$q.status).bind($q.version).bind(&$q.key).bind($q.since).bind($q.until)
    };
}

pub(super) use {bind_filter, impl_instance_store};
