//! Rows of the trigger tables: triggers (webhooks and cron schedules) and their delivery log.

use chrono::{DateTime, Utc};
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
