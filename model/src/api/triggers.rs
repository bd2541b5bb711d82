//! Triggers (webhooks and cron schedules), their secrets, their delivery log and previews.

use crate::{DeliveryOutcome, TriggerKind};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A trigger as clients see it: never its secrets. The kind's settings (`preset`,
/// `expression`, `timezone`, ...) sit beside the common fields. A webhook has `url` and
/// `previous_secret_valid_until`; a cron trigger `next_fire_at` and `pending_fire_at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Trigger {
    pub id: String,
    pub workflow_id: String,
    /// The workflow's name, in the list of every workflow's triggers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_name: Option<String>,
    pub kind: TriggerKind,
    pub name: Option<String>,
    pub paused: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Webhooks: where senders post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Webhooks: until when the secret before the last rotation still verifies.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "super::double_option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<DateTime<Utc>>))]
    pub previous_secret_valid_until: Option<Option<DateTime<Utc>>>,
    /// Cron: the next tick (`null` while paused).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "super::double_option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<DateTime<Utc>>))]
    pub next_fire_at: Option<Option<DateTime<Utc>>>,
    /// Cron: a tick that waits for the previous instance to finish (`overlap: queue_one`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "super::double_option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<DateTime<Utc>>))]
    pub pending_fire_at: Option<Option<DateTime<Utc>>>,
    /// Broker triggers: what this trigger's consumers are doing (`null` until one has run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<ConsumerState>,
    /// The kind's settings.
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

/// What a broker trigger's consumer reported last (every process consumes; the newest report
/// wins).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConsumerState {
    /// `connected`, `disconnected` (then `reason` says why), `paused` (the trigger, or the
    /// workflow's queue over `max_queued`), `held` (the database is held).
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub since: DateTime<Utc>,
    /// Messages waiting on the broker for this trigger, where the broker says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<i64>,
    /// Messages that started an instance in the last minute.
    #[serde(default)]
    pub started_last_minute: i64,
}

/// The answer to a create: the trigger, with a webhook's `secret` (shown this once) or a
/// cron trigger's `next_fire_times`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedTrigger {
    #[serde(flatten)]
    pub trigger: Trigger,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_fire_times: Option<Vec<String>>,
}

/// Optional body of `POST /triggers/{id}/rotate-secret`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RotateSecret {
    /// How long the current secret keeps verifying deliveries (default a day, at most 30).
    #[serde(default)]
    pub grace_ms: Option<u64>,
}

/// A webhook's new secret, shown this once, and until when the old one still verifies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RotatedSecret {
    pub id: String,
    pub secret: String,
    pub previous_secret_valid_until: DateTime<Utc>,
}

/// One entry of a trigger's delivery log: a webhook delivery or a cron tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Delivery {
    pub id: String,
    pub received_at: DateTime<Utc>,
    /// Webhooks: whether the signature checked out (`null` for cron ticks).
    pub verified: Option<bool>,
    pub delivery_id: Option<String>,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub outcome: DeliveryOutcome,
    /// The HTTP status the sender got.
    pub status: Option<i32>,
    pub reason: Option<String>,
    pub instance_id: Option<String>,
}

/// A schedule's next fire times, RFC 3339 in its zone (the offset shows DST).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FireTimes {
    pub timezone: String,
    pub times: Vec<String>,
}
