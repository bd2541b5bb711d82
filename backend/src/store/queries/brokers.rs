//! `brokers.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::brokers::{ConsumerRow, CONSUMER_REPORTS, LIST_BROKER_TRIGGERS, QUEUED_INSTANCES, REPORT_CONSUMER};
use crate::store::triggers::INSERT_DELIVERY;
use crate::store::{DeliveryRow, Result, StoreError, TriggerRow, MAX_DELIVERY_REASON_BYTES};
use trellis_model::excerpt::excerpt;
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::BrokerStore for Store {
    async fn list_broker_triggers(&self) -> Result<Vec<TriggerRow>> {
        Ok(sqlx::query_as(LIST_BROKER_TRIGGERS).fetch_all(self.pool()).await?)
    }

    async fn report_consumer(&self, report: &ConsumerRow) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(REPORT_CONSUMER)
            .bind(report.trigger_id)
            .bind(&report.state)
            .bind(&report.reason)
            .bind(report.lag)
            .bind(report.since)
            .execute(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn consumer_reports(&self) -> Result<Vec<ConsumerRow>> {
        Ok(sqlx::query_as(CONSUMER_REPORTS).fetch_all(self.pool()).await?)
    }

    async fn insert_deliveries(&self, rows: &[DeliveryRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await.map_err(StoreError::from_sqlx)?;
        for d in rows {
            sqlx::query(INSERT_DELIVERY)
                .bind(d.id)
                .bind(d.trigger_id)
                .bind(d.received_at)
                .bind(d.verified)
                .bind(&d.delivery_key)
                .bind(d.scheduled_at)
                .bind(d.outcome)
                .bind(d.status)
                .bind(d.reason.as_deref().map(|r| excerpt(r, MAX_DELIVERY_REASON_BYTES).into_owned()))
                .bind(d.instance_id)
                .bind(&d.body_digest)
                .execute(&mut *tx)
                .await
                .map_err(StoreError::from_sqlx)?;
        }
        tx.commit().await.map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn queued_instances(&self, workflow: Uuid) -> Result<i64> {
        let (count,): (i64,) = sqlx::query_as(QUEUED_INSTANCES).bind(workflow).fetch_one(self.pool()).await?;
        Ok(count)
    }
}
