//! `brokers.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::brokers::{ConsumerRow, CONSUMER_REPORTS, LIST_BROKER_TRIGGERS, QUEUED_INSTANCES, REPORT_CONSUMER};
use crate::store::triggers::DELIVERY_COLUMNS;
use crate::store::{DeliveryRow, Result, StoreError, TriggerRow, MAX_DELIVERY_REASON_BYTES};
use trellis_model::excerpt::excerpt;
use uuid::Uuid;

type Db = <Store as Backend>::Db;
const INSERT_DELIVERIES: &str = const_format::concatcp!("INSERT INTO trigger_deliveries (", DELIVERY_COLUMNS, ") ");

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
        for chunk in rows.chunks(200) {
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_DELIVERIES);
            insert.push_values(chunk, |mut v, d| {
                v.push_bind(d.id)
                    .push_bind(d.trigger_id)
                    .push_bind(d.received_at)
                    .push_bind(d.verified)
                    .push_bind(&d.delivery_key)
                    .push_bind(d.scheduled_at)
                    .push_bind(d.outcome)
                    .push_bind(d.status)
                    .push_bind(d.reason.as_deref().map(|r| excerpt(r, MAX_DELIVERY_REASON_BYTES).into_owned()))
                    .push_bind(d.instance_id)
                    .push_bind(&d.body_digest);
            });
            insert.build().execute(self.pool()).await.map_err(StoreError::from_sqlx)?;
        }
        Ok(())
    }

    async fn queued_instances(&self, workflow: Uuid) -> Result<i64> {
        let (count,): (i64,) = sqlx::query_as(QUEUED_INSTANCES).bind(workflow).fetch_one(self.pool()).await?;
        Ok(count)
    }
}
