//! Whether an instance may take a slot, under `max_concurrent_instances` and the concurrency
//! key's `max_per_key` together: the checks a start or retry makes, the choice of which
//! queued instances an admission takes, and where a key's queue stands for the inspector.
//! Everything here runs under the workflow's lock (see `admission_sql.rs`), which is what
//! makes both limits hold across processes.
//!
//! The order is FIFO per key and, among instances whose key has room, FIFO per workflow: an
//! instance held by its key does not hold back instances with other keys.

macro_rules! impl_slots {
    ($store:ty) => {
        const _: () = {
            use $crate::store::backend::Backend;
            use $crate::store::engine_records::{AdmissionLimits, Held};
            use $crate::store::statuses::ACTIVE;
            use $crate::store::Result;
            use std::collections::HashMap;
            use uuid::Uuid;
            type Db = <$store as Backend>::Db;

            impl $store {
                /// What holds back `asking` (a start that inserted its row, or a retry), or
                /// `None` if it may run now. Takes the workflow's lock.
                ///
                /// Its key is full when `per_key` of its peers run or any peer queued before it
                /// (FIFO per key). The workflow is full when `instances` run or an instance that
                /// could be admitted now is waiting (FIFO: no overtaking); instances held only
                /// by their own key do not count as waiting here.
                pub(super) async fn held_back(
                    tx: &mut sqlx::Transaction<'_, Db>,
                    workflow: Uuid,
                    limits: AdmissionLimits,
                    key: Option<&str>,
                    asking: Uuid,
                ) -> Result<Option<Held>> {
                    Self::lock_workflow(tx, workflow).await?;
                    if let (Some(per_key), Some(key)) = (limits.per_key, key) {
                        let sql = format!(
                            "SELECT EXISTS (SELECT 1 FROM instances WHERE workflow_id = $1 AND concurrency_key = $2 AND status = 'queued' AND id <> $4) \
                             OR (SELECT COUNT(*) FROM (SELECT 1 FROM instances WHERE workflow_id = $1 AND concurrency_key = $2 AND status IN {ACTIVE} LIMIT $3) a) >= $3"
                        );
                        let (full,): (bool,) = sqlx::query_as(&sql)
                            .bind(workflow).bind(key).bind(i64::from(per_key)).bind(asking)
                            .fetch_one(&mut **tx).await?;
                        if full {
                            return Ok(Some(Held::Key));
                        }
                    }
                    let Some(limit) = limits.instances else { return Ok(None) };
                    let waiting = match limits.per_key {
                        None => "SELECT 1 FROM instances q WHERE workflow_id = $1 AND status = 'queued' AND id <> $3".to_owned(),
                        Some(_) => format!("{} AND id <> $3", Self::admissible_queued("$4")),
                    };
                    let sql = format!(
                        "SELECT NOT EXISTS ({waiting}) \
                         AND (SELECT COUNT(*) FROM (SELECT 1 FROM instances WHERE workflow_id = $1 AND status IN {ACTIVE} LIMIT $2) a) < $2"
                    );
                    let mut query = sqlx::query_as(&sql).bind(workflow).bind(i64::from(limit)).bind(asking);
                    if let Some(per_key) = limits.per_key {
                        query = query.bind(i64::from(per_key));
                    }
                    let (free,): (bool,) = query.fetch_one(&mut **tx).await?;
                    Ok((!free).then_some(Held::Workflow))
                }

                /// Queued instances of workflow `$1` whose key has room under the per-key limit
                /// bound at `per_key` (or that have no key), as `q`.
                fn admissible_queued(per_key: &str) -> String {
                    format!(
                        "SELECT q.id, q.concurrency_key FROM instances q WHERE q.workflow_id = $1 AND q.status = 'queued' \
                         AND (q.concurrency_key IS NULL OR (SELECT COUNT(*) FROM instances a \
                         WHERE a.workflow_id = $1 AND a.concurrency_key = q.concurrency_key AND a.status IN {ACTIVE}) < {per_key})"
                    )
                }

                /// The queued instances an admission may take into `free` workflow slots,
                /// oldest first, at most `per_key` running per key counting those it takes.
                pub(super) async fn admissible_ids(
                    tx: &mut sqlx::Transaction<'_, Db>,
                    workflow: Uuid,
                    per_key: u32,
                    free: i64,
                ) -> Result<Vec<Uuid>> {
                    // A bounded look: instances held by their keys are skipped in SQL, so a
                    // long line behind one busy key does not hide instances that could run.
                    let sql = format!("{} ORDER BY q.id LIMIT $3", Self::admissible_queued("$2"));
                    let candidates: Vec<(Uuid, Option<String>)> = sqlx::query_as(&sql)
                        .bind(workflow).bind(i64::from(per_key)).bind(free.min(1_000))
                        .fetch_all(&mut **tx).await?;
                    let keys: Vec<String> = candidates.iter().filter_map(|(_, k)| k.clone()).collect();
                    let mut running = Self::running_per_key(tx, workflow, &keys).await?;
                    let mut ids = Vec::new();
                    for (id, key) in candidates {
                        if ids.len() as i64 >= free {
                            break;
                        }
                        if let Some(key) = key {
                            let n = running.entry(key).or_insert(0);
                            if *n >= i64::from(per_key) {
                                continue;
                            }
                            *n += 1;
                        }
                        ids.push(id);
                    }
                    Ok(ids)
                }

                /// How many instances run now with each of `keys`.
                async fn running_per_key(
                    tx: &mut sqlx::Transaction<'_, Db>,
                    workflow: Uuid,
                    keys: &[String],
                ) -> Result<HashMap<String, i64>> {
                    if keys.is_empty() {
                        return Ok(HashMap::new());
                    }
                    let mut query = sqlx::QueryBuilder::<Db>::new(
                        "SELECT concurrency_key, COUNT(*) FROM instances WHERE workflow_id = ",
                    );
                    query.push_bind(workflow).push(format!(" AND status IN {ACTIVE} AND concurrency_key IN ("));
                    let mut list = query.separated(", ");
                    for key in keys {
                        list.push_bind(key.clone());
                    }
                    list.push_unseparated(") GROUP BY concurrency_key");
                    let rows: Vec<(String, i64)> = query.build_query_as().fetch_all(&mut **tx).await?;
                    Ok(rows.into_iter().collect())
                }
            }

            #[async_trait::async_trait]
            impl $crate::store::KeyQueue for $store {
                async fn key_queue_place(&self, workflow: Uuid, key: &str, id: Uuid) -> Result<$crate::store::QueuePlace> {
                    let sql = format!(
                        "SELECT (SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND concurrency_key = $2 AND status = 'queued' AND id < $3), \
                         (SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND concurrency_key = $2 AND status IN {ACTIVE})"
                    );
                    let (ahead, active): (i64, i64) =
                        sqlx::query_as(&sql).bind(workflow).bind(key).bind(id).fetch_one(self.pool()).await?;
                    Ok($crate::store::QueuePlace { ahead, active })
                }
            }
        };
    };
}

pub(super) use impl_slots;

/// Where a queued instance stands among those with its concurrency key.
#[async_trait::async_trait]
pub trait KeyQueue: Send + Sync + 'static {
    /// Instances with `key` queued before `id`, and how many with it run now.
    async fn key_queue_place(
        &self,
        workflow: uuid::Uuid,
        key: &str,
        id: uuid::Uuid,
    ) -> super::Result<super::QueuePlace>;
}
