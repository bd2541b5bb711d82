//! Triggers (webhooks and cron schedules) and their delivery log: the rows, the trait and
//! column lists here, the SQL in `queries/triggers.rs` (one body for both backends). Claiming
//! due cron schedules uses the backend's `SKIP_LOCKED`, so processes sharing one Postgres split
//! the due schedules instead of queueing on them.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use serde_json::Value;
use sqlx::types::Json;
use trellis_model::{DeliveryOutcome, TriggerKind};
use uuid::Uuid;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TriggerRow {
    pub id: Uuid,
    pub workflow_id: Uuid,
    pub kind: TriggerKind,
    pub name: Option<String>,
    pub paused: bool,
    /// The kind's settings; `triggers::TriggerSpec` gives them a type.
    pub spec: Json<Value>,
    pub secret: Option<String>,
    pub previous_secret: Option<String>,
    pub previous_secret_until: Option<DateTime<Utc>>,
    pub next_fire_at: Option<DateTime<Utc>>,
    pub pending_fire_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A change to a trigger; `None` leaves a column as it is.
#[derive(Debug, Clone, Default)]
pub struct TriggerChange {
    pub name: Option<Option<String>>,
    pub paused: Option<bool>,
    pub spec: Option<Value>,
    /// Cron: the next tick (recomputed whenever the schedule or `paused` changes).
    pub next_fire_at: Option<Option<DateTime<Utc>>>,
}

/// A new secret; the current one stays valid until `previous_until`.
#[derive(Debug, Clone)]
pub struct SecretRotation {
    pub secret: String,
    pub previous_until: DateTime<Utc>,
}

/// The most of a delivery's `reason` the log keeps (cut on a character boundary, marked): a
/// refusal may quote the sender's body, and the log keeps every delivery for 7 days.
pub const MAX_DELIVERY_REASON_BYTES: usize = 4096;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: Uuid,
    pub trigger_id: Uuid,
    pub received_at: DateTime<Utc>,
    /// Webhooks: whether the signature checked out (`None` for cron ticks).
    pub verified: Option<bool>,
    pub delivery_key: Option<String>,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub outcome: DeliveryOutcome,
    pub status: Option<i32>,
    /// Stored cut to [`MAX_DELIVERY_REASON_BYTES`]: it may quote what the sender sent.
    pub reason: Option<String>,
    pub instance_id: Option<Uuid>,
    /// The SHA-256 (hex) of the signed body, when it is a dedupe key (the GitHub preset).
    pub body_digest: Option<String>,
}

/// A claimed cron tick's end: where the schedule goes next. Written only if the claim is
/// still this process's and nobody paused or rescheduled the trigger meanwhile.
#[derive(Debug, Clone)]
pub struct FireDone {
    pub trigger: Uuid,
    pub owner: String,
    /// `next_fire_at` as claimed.
    pub claimed_next: Option<DateTime<Utc>>,
    pub next: Option<DateTime<Utc>>,
    pub pending: Option<DateTime<Utc>>,
}

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

// The statements `queries/triggers.rs` runs, named for what they do.
pub(super) const INSERT_TRIGGER: &str = concatcp!(
    "INSERT INTO triggers (",
    crate::store::triggers::TRIGGER_COLUMNS,
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
);
pub(super) const GET_TRIGGER: &str =
    concatcp!("SELECT ", crate::store::triggers::TRIGGER_COLUMNS, " FROM triggers WHERE id = $1");
pub(super) const LIST_TRIGGERS: &str =
    concatcp!("SELECT ", crate::store::triggers::TRIGGER_COLUMNS, " FROM triggers WHERE workflow_id = $1 ORDER BY id");
pub(super) const LIST_ALL_TRIGGERS: &str =
    concatcp!("SELECT ", crate::store::triggers::TRIGGER_COLUMNS, " FROM triggers ORDER BY id LIMIT $1");
pub(super) const UPDATE_TRIGGER: &str = concatcp!(
    "UPDATE triggers SET name = CASE WHEN $1 THEN $2 ELSE name END, paused = COALESCE($3, paused), spec \
    = COALESCE($4, spec), next_fire_at = CASE WHEN $5 THEN $6 ELSE next_fire_at END, pending_fire_at = \
    CASE WHEN $5 THEN NULL ELSE pending_fire_at END, updated_at = $7 WHERE id = $8 RETURNING ",
    crate::store::triggers::TRIGGER_COLUMNS
);
pub(super) const DELETE_TRIGGER: &str = "DELETE FROM triggers WHERE id = $1";
pub(super) const ROTATE_SECRET: &str = concatcp!(
    "UPDATE triggers SET previous_secret = secret, previous_secret_until = $1, secret = $2, updated_at = \
    $3 WHERE id = $4 AND secret IS NOT NULL RETURNING ",
    crate::store::triggers::TRIGGER_COLUMNS
);
pub(super) const INSERT_DELIVERY: &str = concatcp!(
    "INSERT INTO trigger_deliveries (",
    crate::store::triggers::DELIVERY_COLUMNS,
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
);
pub(super) const LIST_DELIVERIES: &str = concatcp!(
    "SELECT ",
    crate::store::triggers::DELIVERY_COLUMNS,
    " FROM trigger_deliveries WHERE trigger_id = $1 AND ($2 IS NULL OR id < $2) ORDER BY id DESC LIMIT $3"
);
pub(super) const DELIVERED_INSTANCE: &str =
    "SELECT instance_id FROM trigger_deliveries WHERE trigger_id = $1 AND (delivery_key = $2 OR \
    body_digest = $3) AND instance_id IS NOT NULL AND received_at > $4 ORDER BY id LIMIT 1";
pub(super) const STARTED_SINCE: &str =
    "SELECT COUNT(*), MIN(received_at) FROM trigger_deliveries WHERE trigger_id = $1 AND outcome = \
    'started' AND received_at > $2";
pub(super) const ACTIVE_TRIGGER_INSTANCES: &str = concatcp!(
    "SELECT COUNT(*) FROM instances i WHERE i.workflow_id = $1 AND i.status IN ",
    crate::store::statuses::UNFINISHED,
    " AND EXISTS (SELECT 1 FROM trigger_deliveries d WHERE d.instance_id = i.id AND d.trigger_id = $2)"
);
pub(super) const DELETE_OLD_DELIVERIES: &str = "DELETE FROM trigger_deliveries WHERE received_at < $1";
pub(super) const DELETE_OLD_TRIGGER_STARTS: &str =
    "DELETE FROM start_requests WHERE created_at < $1 AND (idempotency_key LIKE 'cron:%' OR \
    idempotency_key LIKE 'webhook:%' OR idempotency_key LIKE 'broker:%')";
pub(super) const FINISH_FIRE: &str =
    "UPDATE triggers SET next_fire_at = $1, pending_fire_at = $2, fire_owner = NULL, fire_lease_until = \
    NULL WHERE id = $3 AND fire_owner = $4 AND paused = $5 AND next_fire_at = $6";
pub(super) const RELEASE_FIRE: &str =
    "UPDATE triggers SET fire_owner = NULL, fire_lease_until = NULL WHERE id = $1 AND fire_owner = $2";
pub(super) const NEXT_TRIGGER_DUE: &str =
    "SELECT MIN(CASE WHEN fire_lease_until > $2 THEN fire_lease_until ELSE next_fire_at END) FROM \
    triggers WHERE paused = $1 AND next_fire_at IS NOT NULL";
