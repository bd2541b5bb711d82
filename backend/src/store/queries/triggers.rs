//! `triggers.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::triggers::{
    ACTIVE_TRIGGER_INSTANCES, DELETE_OLD_DELIVERIES, DELETE_OLD_TRIGGER_STARTS, DELETE_TRIGGER, DELIVERED_INSTANCE,
    FINISH_FIRE, GET_TRIGGER, INSERT_DELIVERY, INSERT_TRIGGER, LIST_ALL_TRIGGERS, LIST_DELIVERIES, LIST_TRIGGERS,
    NEXT_TRIGGER_DUE, RELEASE_FIRE, ROTATE_SECRET, STARTED_SINCE, UPDATE_TRIGGER,
};
use crate::store::{Result, StoreError, MAX_DELIVERY_REASON_BYTES};
use chrono::{DateTime, Utc};
use const_format::concatcp;
use sqlx::types::Json;
use trellis_model::excerpt::excerpt;
use uuid::Uuid;
const SKIP_LOCKED: &str = <Store as Backend>::SKIP_LOCKED;
const CLAIM_DUE_TRIGGERS: &str = concatcp!(
    "UPDATE triggers SET fire_owner = $1, fire_lease_until = $2 WHERE id IN (SELECT id FROM triggers \
    WHERE paused = $5 AND (next_fire_at <= $3 OR pending_fire_at IS NOT NULL) AND (fire_lease_until IS \
    NULL OR fire_lease_until <= $3) ORDER BY next_fire_at LIMIT $4",
    SKIP_LOCKED,
    ") RETURNING ",
    crate::store::triggers::TRIGGER_COLUMNS
);

#[async_trait::async_trait]
impl crate::store::TriggerStore for Store {
    async fn insert_trigger(&self, t: &crate::store::TriggerRow) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(INSERT_TRIGGER)
            .bind(t.id)
            .bind(t.workflow_id)
            .bind(t.kind)
            .bind(&t.name)
            .bind(t.paused)
            .bind(&t.spec)
            .bind(&t.secret)
            .bind(&t.previous_secret)
            .bind(t.previous_secret_until)
            .bind(t.next_fire_at)
            .bind(t.pending_fire_at)
            .bind(t.created_at)
            .bind(t.updated_at)
            .execute(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn get_trigger(&self, id: Uuid) -> Result<Option<crate::store::TriggerRow>> {
        Ok(sqlx::query_as(GET_TRIGGER).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn list_triggers(&self, workflow: Uuid) -> Result<Vec<crate::store::TriggerRow>> {
        Ok(sqlx::query_as(LIST_TRIGGERS).bind(workflow).fetch_all(self.pool()).await?)
    }

    async fn list_all_triggers(&self, limit: i64) -> Result<Vec<crate::store::TriggerRow>> {
        Ok(sqlx::query_as(LIST_ALL_TRIGGERS).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn update_trigger(
        &self,
        id: Uuid,
        c: &crate::store::TriggerChange,
    ) -> Result<Option<crate::store::TriggerRow>> {
        let _guard = self.write_guard().await;
        // A new schedule or a pause/resume also drops a tick held back by `queue_one`.
        Ok(sqlx::query_as(UPDATE_TRIGGER)
            .bind(c.name.is_some())
            .bind(c.name.clone().flatten())
            .bind(c.paused)
            .bind(c.spec.as_ref().map(Json))
            .bind(c.next_fire_at.is_some())
            .bind(c.next_fire_at.flatten())
            .bind(Utc::now())
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    async fn delete_trigger(&self, id: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(DELETE_TRIGGER).bind(id).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn rotate_secret(
        &self,
        id: Uuid,
        r: &crate::store::SecretRotation,
    ) -> Result<Option<crate::store::TriggerRow>> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query_as(ROTATE_SECRET)
            .bind(r.previous_until)
            .bind(&r.secret)
            .bind(Utc::now())
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    async fn insert_delivery(&self, d: &crate::store::DeliveryRow) -> Result<()> {
        let _guard = self.write_guard().await;
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
            .execute(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn list_deliveries(
        &self,
        trigger: Uuid,
        before: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<crate::store::DeliveryRow>> {
        Ok(sqlx::query_as(LIST_DELIVERIES).bind(trigger).bind(before).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn delivered_instance(
        &self,
        trigger: Uuid,
        key: &str,
        digest: Option<&str>,
        since: DateTime<Utc>,
    ) -> Result<Option<Uuid>> {
        // `body_digest = NULL` is never true: without a digest only the key matches.
        let row: Option<(Uuid,)> = sqlx::query_as(DELIVERED_INSTANCE)
            .bind(trigger)
            .bind(key)
            .bind(digest)
            .bind(since)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(|(id,)| id))
    }

    async fn started_since(&self, trigger: Uuid, since: DateTime<Utc>) -> Result<(i64, Option<DateTime<Utc>>)> {
        Ok(sqlx::query_as(STARTED_SINCE).bind(trigger).bind(since).fetch_one(self.pool()).await?)
    }

    async fn active_trigger_instances(&self, trigger: Uuid, workflow: Uuid) -> Result<i64> {
        // Through the workflow's unfinished instances (few, and indexed), not the
        // trigger's whole log.
        let (n,): (i64,) =
            sqlx::query_as(ACTIVE_TRIGGER_INSTANCES).bind(workflow).bind(trigger).fetch_one(self.pool()).await?;
        Ok(n)
    }

    async fn purge_trigger_history(&self, before: DateTime<Utc>) -> Result<u64> {
        let _guard = self.write_guard().await;
        let log = sqlx::query(DELETE_OLD_DELIVERIES).bind(before).execute(self.pool()).await?;
        let starts = sqlx::query(DELETE_OLD_TRIGGER_STARTS).bind(before).execute(self.pool()).await?;
        Ok(log.rows_affected() + starts.rows_affected())
    }

    async fn claim_due_triggers(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<crate::store::TriggerRow>> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query_as(CLAIM_DUE_TRIGGERS)
            .bind(owner)
            .bind(lease_until)
            .bind(now)
            .bind(limit)
            .bind(false)
            .fetch_all(self.pool())
            .await?)
    }

    async fn finish_fire(&self, d: &crate::store::FireDone) -> Result<bool> {
        let _guard = self.write_guard().await;
        let moved = sqlx::query(FINISH_FIRE)
            .bind(d.next)
            .bind(d.pending)
            .bind(d.trigger)
            .bind(&d.owner)
            .bind(false)
            .bind(d.claimed_next)
            .execute(self.pool())
            .await?;
        if moved.rows_affected() == 1 {
            return Ok(true);
        }
        sqlx::query(RELEASE_FIRE).bind(d.trigger).bind(&d.owner).execute(self.pool()).await?;
        Ok(false)
    }

    async fn next_trigger_due(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
        let (due,): (Option<DateTime<Utc>>,) =
            sqlx::query_as(NEXT_TRIGGER_DUE).bind(false).bind(now).fetch_one(self.pool()).await?;
        Ok(due)
    }
}
