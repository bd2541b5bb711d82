//! `map_items.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::Store;
use crate::store::backend::Backend;
use crate::store::batch::BatchWrites;
use crate::store::map_items::{
    MapItemCount, MapItemRow, MapItemWrites, DROP_MAP_ITEMS_FROM, FENCE_HOLDS, INSERT_MAP_ITEMS, MAP_ITEM_COUNTS,
    MAP_ITEM_PAGE, MAP_ROWS_PER_INSERT, SELECT_MAP_ITEMS, UPSERT_MAP_ITEMS_TAIL,
};
use crate::store::Result;
use std::collections::HashMap;
use trellis_model::NodeStatus;
use uuid::Uuid;

type Db = <Store as Backend>::Db;
/// Locks the instance by writing it: its items and history change it (one more `rev`).
const LOCK_INSTANCE: &str = "UPDATE instances SET rev = rev + 1 WHERE id = $1 RETURNING id";

#[async_trait::async_trait]
impl crate::store::MapStore for Store {
    async fn map_items(&self, instance: Uuid, node: &str) -> Result<Vec<MapItemRow>> {
        Ok(sqlx::query_as(SELECT_MAP_ITEMS).bind(instance).bind(node).fetch_all(self.pool()).await?)
    }

    async fn write_map_items(&self, w: &MapItemWrites<'_>) -> Result<Option<i64>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // The instance lock first (the lock order every transition keeps), which also orders
        // these history entries after any transition's.
        let locked: Option<(Uuid,)> = sqlx::query_as(LOCK_INSTANCE).bind(w.instance).fetch_optional(&mut *tx).await?;
        let fence = w.fence;
        let holds: Option<(i32,)> = sqlx::query_as(FENCE_HOLDS)
            .bind(fence.work_id)
            .bind(&fence.owner)
            .bind(fence.epoch)
            .fetch_optional(&mut *tx)
            .await?;
        if locked.is_none() || holds.is_none() {
            return Ok(None);
        }
        self.snapshots().forget(&[w.instance]);
        if let Some(from) = w.drop_from {
            sqlx::query(DROP_MAP_ITEMS_FROM).bind(w.instance).bind(w.node).bind(from).execute(&mut *tx).await?;
        }
        for chunk in w.rows.chunks(MAP_ROWS_PER_INSERT) {
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_MAP_ITEMS);
            insert.push_values(chunk, |mut values, row| {
                values
                    .push_bind(w.instance)
                    .push_bind(w.node)
                    .push_bind(row.idx)
                    .push_bind(&row.item_digest)
                    .push_bind(row.status)
                    .push_bind(row.attempts)
                    .push_bind(row.output.as_ref())
                    .push_bind(&row.error)
                    .push_bind(row.child_id)
                    .push_bind(row.started_at)
                    .push_bind(row.ended_at);
            });
            insert.push(UPSERT_MAP_ITEMS_TAIL);
            insert.build().keep_built().execute(&mut *tx).await?;
        }
        let mut first = None;
        if !w.events.is_empty() {
            let mut batch = BatchWrites::default();
            batch.events.push((w.instance, w.workflow, w.events.to_vec()));
            let mut sink = super::sink::Sink::new();
            first = self.write_history(&mut tx, &mut sink, &batch, &HashMap::new()).await?.get(&w.instance).copied();
            sink.finish(&mut tx).await?;
        }
        tx.commit().await?;
        crate::store::phases::PHASES.transaction();
        Ok(Some(first.unwrap_or(0)))
    }

    async fn map_item_page(
        &self,
        instance: Uuid,
        node: &str,
        status: Option<NodeStatus>,
        after: i32,
        limit: i64,
    ) -> Result<Vec<MapItemRow>> {
        let rows = sqlx::query_as(MAP_ITEM_PAGE)
            .bind(instance)
            .bind(node)
            .bind(after)
            .bind(status)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        Ok(rows)
    }

    async fn map_item_counts(&self, instance: Uuid) -> Result<Vec<MapItemCount>> {
        Ok(sqlx::query_as(MAP_ITEM_COUNTS).bind(instance).fetch_all(self.pool()).await?)
    }
}
