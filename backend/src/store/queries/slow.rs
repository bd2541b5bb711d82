//! `slow.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::slow::{
    RunningNode, SlowThreshold, DELETE_P95_THRESHOLD, PUT_P95_THRESHOLD, RECENT_DURATIONS, RUNNING_WITHOUT_STUCK_AFTER,
    SLOW_THRESHOLDS,
};
use crate::store::Result;
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::SlowStore for Store {
    async fn slow_thresholds(&self, workflow: Uuid, version: i64) -> Result<Vec<SlowThreshold>> {
        Ok(sqlx::query_as(SLOW_THRESHOLDS).bind(workflow).bind(version).fetch_all(self.pool()).await?)
    }

    async fn running_without_stuck_after(&self) -> Result<Vec<RunningNode>> {
        Ok(sqlx::query_as(RUNNING_WITHOUT_STUCK_AFTER).fetch_all(self.pool()).await?)
    }

    async fn recent_durations(
        &self,
        workflow: Uuid,
        node: &str,
        limit: i64,
    ) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>> {
        Ok(sqlx::query_as(RECENT_DURATIONS).bind(workflow).bind(node).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn put_p95_threshold(&self, node: &RunningNode, threshold_ms: Option<i64>, now: DateTime<Utc>) -> Result<()> {
        let _guard = self.write_guard().await;
        let statement = match threshold_ms {
            Some(ms) => sqlx::query(PUT_P95_THRESHOLD)
                .bind(node.workflow_id)
                .bind(node.version)
                .bind(&node.node_id)
                .bind(ms)
                .bind(now),
            None => sqlx::query(DELETE_P95_THRESHOLD).bind(node.workflow_id).bind(node.version).bind(&node.node_id),
        };
        statement.execute(self.pool()).await?;
        Ok(())
    }
}
