//! `trigger_sql.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::{Result, StoreError};
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;
const SKIP_LOCKED: &str = <Store as Backend>::SKIP_LOCKED;

#[async_trait::async_trait]
impl crate::store::TriggerStore for Store {
    async fn insert_trigger(&self, t: &crate::store::TriggerRow) -> Result<()> {
        let _guard = self.write_guard().await;
        let sql = format!(
            "INSERT INTO triggers ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            crate::store::trigger_sql::TRIGGER_COLUMNS
        );
        sqlx::query(&sql)
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
        let sql = format!("SELECT {} FROM triggers WHERE id = $1", crate::store::trigger_sql::TRIGGER_COLUMNS);
        Ok(sqlx::query_as(&sql).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn list_triggers(&self, workflow: Uuid) -> Result<Vec<crate::store::TriggerRow>> {
        let sql = format!(
            "SELECT {} FROM triggers WHERE workflow_id = $1 ORDER BY id",
            crate::store::trigger_sql::TRIGGER_COLUMNS
        );
        Ok(sqlx::query_as(&sql).bind(workflow).fetch_all(self.pool()).await?)
    }

    async fn list_all_triggers(&self, limit: i64) -> Result<Vec<crate::store::TriggerRow>> {
        let sql = format!("SELECT {} FROM triggers ORDER BY id LIMIT $1", crate::store::trigger_sql::TRIGGER_COLUMNS);
        Ok(sqlx::query_as(&sql).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn update_trigger(
        &self,
        id: Uuid,
        c: &crate::store::TriggerChange,
    ) -> Result<Option<crate::store::TriggerRow>> {
        let _guard = self.write_guard().await;
        // A new schedule or a pause/resume also drops a tick held back by `queue_one`.
        let sql = format!(
            "UPDATE triggers SET name = CASE WHEN $1 THEN $2 ELSE name END, paused = COALESCE($3, paused), \
             spec = COALESCE($4, spec), next_fire_at = CASE WHEN $5 THEN $6 ELSE next_fire_at END, \
             pending_fire_at = CASE WHEN $5 THEN NULL ELSE pending_fire_at END, updated_at = $7 \
             WHERE id = $8 RETURNING {}",
            crate::store::trigger_sql::TRIGGER_COLUMNS
        );
        Ok(sqlx::query_as(&sql)
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
        let done = sqlx::query("DELETE FROM triggers WHERE id = $1").bind(id).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn rotate_secret(
        &self,
        id: Uuid,
        r: &crate::store::SecretRotation,
    ) -> Result<Option<crate::store::TriggerRow>> {
        let _guard = self.write_guard().await;
        let sql = format!(
            "UPDATE triggers SET previous_secret = secret, previous_secret_until = $1, secret = $2, updated_at = $3 \
             WHERE id = $4 AND secret IS NOT NULL RETURNING {}",
            crate::store::trigger_sql::TRIGGER_COLUMNS
        );
        Ok(sqlx::query_as(&sql)
            .bind(r.previous_until)
            .bind(&r.secret)
            .bind(Utc::now())
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    async fn insert_delivery(&self, d: &crate::store::DeliveryRow) -> Result<()> {
        let _guard = self.write_guard().await;
        let sql = format!(
            "INSERT INTO trigger_deliveries ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            crate::store::trigger_sql::DELIVERY_COLUMNS
        );
        sqlx::query(&sql)
            .bind(d.id)
            .bind(d.trigger_id)
            .bind(d.received_at)
            .bind(d.verified)
            .bind(&d.delivery_key)
            .bind(d.scheduled_at)
            .bind(d.outcome)
            .bind(d.status)
            .bind(&d.reason)
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
        let sql = format!(
            "SELECT {} FROM trigger_deliveries WHERE trigger_id = $1 AND ($2 IS NULL OR id < $2) ORDER BY id DESC \
             LIMIT $3",
            crate::store::trigger_sql::DELIVERY_COLUMNS
        );
        Ok(sqlx::query_as(&sql).bind(trigger).bind(before).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn delivered_instance(
        &self,
        trigger: Uuid,
        key: &str,
        digest: Option<&str>,
        since: DateTime<Utc>,
    ) -> Result<Option<Uuid>> {
        // `body_digest = NULL` is never true: without a digest only the key matches.
        let row: Option<(Uuid,)> = sqlx::query_as(
            "SELECT instance_id FROM trigger_deliveries WHERE trigger_id = $1 AND (delivery_key = $2 OR body_digest \
             = $3) \
             AND instance_id IS NOT NULL AND received_at > $4 ORDER BY id LIMIT 1",
        )
        .bind(trigger)
        .bind(key)
        .bind(digest)
        .bind(since)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|(id,)| id))
    }

    async fn started_since(&self, trigger: Uuid, since: DateTime<Utc>) -> Result<(i64, Option<DateTime<Utc>>)> {
        Ok(sqlx::query_as(
            "SELECT COUNT(*), MIN(received_at) FROM trigger_deliveries WHERE trigger_id = $1 \
             AND outcome = 'started' AND received_at > $2",
        )
        .bind(trigger)
        .bind(since)
        .fetch_one(self.pool())
        .await?)
    }

    async fn active_trigger_instances(&self, trigger: Uuid, workflow: Uuid) -> Result<i64> {
        // Through the workflow's unfinished instances (few, and indexed), not the
        // trigger's whole log.
        let sql = format!(
            "SELECT COUNT(*) FROM instances i WHERE i.workflow_id = $1 AND i.status IN {} \
             AND EXISTS (SELECT 1 FROM trigger_deliveries d WHERE d.instance_id = i.id AND d.trigger_id = $2)",
            crate::store::statuses::UNFINISHED
        );
        let (n,): (i64,) = sqlx::query_as(&sql).bind(workflow).bind(trigger).fetch_one(self.pool()).await?;
        Ok(n)
    }

    async fn purge_trigger_history(&self, before: DateTime<Utc>) -> Result<u64> {
        let _guard = self.write_guard().await;
        let log = sqlx::query("DELETE FROM trigger_deliveries WHERE received_at < $1")
            .bind(before)
            .execute(self.pool())
            .await?;
        let starts = sqlx::query(
            "DELETE FROM start_requests WHERE created_at < $1 \
             AND (idempotency_key LIKE 'cron:%' OR idempotency_key LIKE 'webhook:%')",
        )
        .bind(before)
        .execute(self.pool())
        .await?;
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
        let sql = format!(
            "UPDATE triggers SET fire_owner = $1, fire_lease_until = $2 WHERE id IN (SELECT id FROM triggers \
             WHERE paused = $5 AND (next_fire_at <= $3 OR pending_fire_at IS NOT NULL) \
             AND (fire_lease_until IS NULL OR fire_lease_until <= $3) ORDER BY next_fire_at LIMIT $4{SKIP_LOCKED}) \
             RETURNING {}",
            crate::store::trigger_sql::TRIGGER_COLUMNS
        );
        Ok(sqlx::query_as(&sql)
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
        let moved = sqlx::query(
            "UPDATE triggers SET next_fire_at = $1, pending_fire_at = $2, fire_owner = NULL, fire_lease_until = NULL \
             WHERE id = $3 AND fire_owner = $4 AND paused = $5 AND next_fire_at = $6",
        )
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
        sqlx::query("UPDATE triggers SET fire_owner = NULL, fire_lease_until = NULL WHERE id = $1 AND fire_owner = $2")
            .bind(d.trigger)
            .bind(&d.owner)
            .execute(self.pool())
            .await?;
        Ok(false)
    }

    async fn next_trigger_due(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
        let (due,): (Option<DateTime<Utc>>,) = sqlx::query_as(
            "SELECT MIN(CASE WHEN fire_lease_until > $2 THEN fire_lease_until ELSE next_fire_at END) FROM triggers \
             WHERE paused = $1 AND next_fire_at IS NOT NULL",
        )
        .bind(false)
        .bind(now)
        .fetch_one(self.pool())
        .await?;
        Ok(due)
    }
}
