//! The triggers' SQL, the trait and column lists here, the SQL in `shared/triggers.rs`
//! (one body for both backends). Claiming due cron schedules uses the backend's `SKIP_LOCKED`, so
//! processes sharing one Postgres split the due schedules instead of queueing on them.

use super::trigger_records::{DeliveryRow, FireDone, SecretRotation, TriggerChange, TriggerRow};
use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

pub(super) const TRIGGER_COLUMNS: &str = "id, workflow_id, kind, name, paused, spec, secret, previous_secret, \
     previous_secret_until, next_fire_at, pending_fire_at, created_at, updated_at";
pub(super) const DELIVERY_COLUMNS: &str =
    "id, trigger_id, received_at, verified, delivery_key, scheduled_at, outcome, status, reason, instance_id, \
     body_digest";

/// Webhook and cron triggers, and the log of what each delivery or tick did.
#[async_trait]
pub trait TriggerStore: Send + Sync + 'static {
    async fn insert_trigger(&self, row: &TriggerRow) -> Result<()>;
    async fn get_trigger(&self, id: Uuid) -> Result<Option<TriggerRow>>;
    async fn list_triggers(&self, workflow: Uuid) -> Result<Vec<TriggerRow>>;
    /// Every workflow's triggers, oldest first, at most `limit`.
    async fn list_all_triggers(&self, limit: i64) -> Result<Vec<TriggerRow>>;
    async fn update_trigger(&self, id: Uuid, change: &TriggerChange) -> Result<Option<TriggerRow>>;
    /// `false` if there is no such trigger.
    async fn delete_trigger(&self, id: Uuid) -> Result<bool>;
    async fn rotate_secret(&self, id: Uuid, rotation: &SecretRotation) -> Result<Option<TriggerRow>>;

    async fn insert_delivery(&self, row: &DeliveryRow) -> Result<()>;
    /// Newest first, before the cursor `before`.
    async fn list_deliveries(&self, trigger: Uuid, before: Option<Uuid>, limit: i64) -> Result<Vec<DeliveryRow>>;
    /// The instance an earlier delivery with this key, or with this body digest when one is
    /// given, (received after `since`) started.
    async fn delivered_instance(
        &self,
        trigger: Uuid,
        key: &str,
        digest: Option<&str>,
        since: DateTime<Utc>,
    ) -> Result<Option<Uuid>>;
    /// How many deliveries started an instance after `since`, and the oldest of them.
    async fn started_since(&self, trigger: Uuid, since: DateTime<Utc>) -> Result<(i64, Option<DateTime<Utc>>)>;
    /// Instances this trigger started that have not finished (queued, running or paused).
    async fn active_trigger_instances(&self, trigger: Uuid, workflow: Uuid) -> Result<i64>;
    /// Deletes the delivery log, and the idempotency records of trigger starts, from before
    /// `before`: by then no delivery or tick can be repeated (dedupe lasts 24 h, a tick's
    /// lease minutes).
    async fn purge_trigger_history(&self, before: DateTime<Utc>) -> Result<u64>;

    /// Leases up to `limit` unpaused schedules whose tick is due (or that hold a queued tick).
    async fn claim_due_triggers(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<TriggerRow>>;
    /// Moves a claimed schedule on and gives up the lease; `false` if the schedule changed
    /// meanwhile (then only the lease is given up).
    async fn finish_fire(&self, done: &FireDone) -> Result<bool>;
    /// When the next unpaused schedule becomes claimable: its tick, or for one leased by a
    /// process still firing it, the lease's end.
    async fn next_trigger_due(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>>;
}
