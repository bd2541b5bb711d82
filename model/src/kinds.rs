//! The closed sets besides the statuses (`status.rs`): roles, where users sign in, bulk jobs, triggers, their
//! delivery log, what a node waits on and alert deliveries. Each is defined once, here, with the text it has
//! on the wire and in its column (the same text: serde's name, which a test checks), so the
//! server, its store and the SPA cannot disagree on a name.

use crate::status::string_forms;
use serde::{Deserialize, Serialize};

/// Roles, each including the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Viewer,
    Operator,
    Editor,
    Admin,
}

string_forms!(Role { Viewer => "viewer", Operator => "operator", Editor => "editor", Admin => "admin" });

/// Where a user signs in: with a password here, or through the single sign-on provider (made
/// at their first sign-in there; no password works for them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum UserSource {
    Local,
    Oidc,
}

string_forms!(UserSource { Local => "local", Oidc => "oidc" });

/// A name that is no role: the error says which names are.
impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::parse(s).ok_or_else(|| format!("unknown role `{s}`; use viewer, operator, editor or admin"))
    }
}

/// What a bulk job does to each instance it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    Purge,
    Cancel,
    /// Re-runs the failed, canceled or timed-out nodes (`"from": "failed"`) of each instance.
    Retry,
}

string_forms!(JobKind { Purge => "purge", Cancel => "cancel", Retry => "retry" });

/// Where a bulk job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Canceled,
}

string_forms!(JobStatus {
    Queued => "queued", Running => "running", Succeeded => "succeeded", Failed => "failed", Canceled => "canceled",
});

impl JobStatus {
    /// Finished: the job does nothing more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled)
    }
}

/// What starts a trigger's instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TriggerKind {
    /// A signed HTTP delivery.
    Webhook,
    /// A schedule's tick.
    Cron,
    /// A message on a NATS JetStream stream (a durable pull consumer).
    Nats,
    /// A message on a RabbitMQ (AMQP 0-9-1) queue.
    Amqp,
    /// A message on an MQTT topic (QoS 1, a persistent session).
    Mqtt,
}

string_forms!(TriggerKind { Webhook => "webhook", Cron => "cron", Nats => "nats", Amqp => "amqp", Mqtt => "mqtt" });

impl TriggerKind {
    /// Whether this kind takes messages from a broker (a consumer in every process).
    pub fn is_broker(self) -> bool {
        matches!(self, TriggerKind::Nats | TriggerKind::Amqp | TriggerKind::Mqtt)
    }
}

/// What became of a webhook delivery or a cron tick (a trigger's delivery log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeliveryOutcome {
    /// An instance started.
    Started,
    /// A delivery id seen before: the instance the first one started.
    Duplicate,
    /// Refused for something the sender (or the workflow) can fix.
    Rejected,
    /// The server could not handle it, or a schedule stopped.
    Failed,
    /// A cron tick while an earlier instance still ran (`overlap: skip`).
    Skipped,
    /// A cron tick that waits for the earlier instance to finish (`overlap: queue_one`).
    Queued,
    /// Cron ticks that passed while no process ran, dropped under `catch_up`.
    Missed,
    /// Refused by a rate limit (the workflow's `rate_limit`, or a webhook's per-minute limit):
    /// nothing started.
    RateLimited,
    /// A broker message the server could not handle this time (the database or the sandbox
    /// was unavailable): left unacknowledged, so the broker delivers it again.
    Error,
}

string_forms!(DeliveryOutcome {
    Started => "started", Duplicate => "duplicate", Rejected => "rejected", Failed => "failed", Skipped => "skipped",
    Queued => "queued", Missed => "missed", RateLimited => "rate_limited",
    Error => "error",
});

/// What a waiting node waits on (`instance_nodes.wait_kind`, the `trellis.wait` span attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    Timer,
    Signal,
    Task,
    /// A `subworkflow` node waits for its child instance.
    Child,
    /// A retry's backoff, between two attempts.
    Backoff,
    /// Ready, but the instance already runs `max_parallel_nodes` attempts.
    Slot,
    /// An `approval` node waits for people's decisions.
    Approval,
}

string_forms!(WaitKind {
    Timer => "timer", Signal => "signal", Task => "task", Child => "child", Backoff => "backoff", Slot => "slot",
    Approval => "approval",
});

/// What an alert delivery is about: a rule's `when`, or a test sent from its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AlertEvent {
    Failed,
    TimedOut,
    Slow,
    QueueDepth,
    BackupFailed,
    ApprovalRequested,
    Test,
}

string_forms!(AlertEvent {
    Failed => "failed", TimedOut => "timed_out", Slow => "slow", QueueDepth => "queue_depth",
    BackupFailed => "backup_failed", ApprovalRequested => "approval_requested", Test => "test",
});

/// Where an alert delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AlertDeliveryStatus {
    /// To be sent, or tried again.
    Pending,
    Delivered,
    /// Its attempts are used up.
    Failed,
    /// Within the dedupe window of an earlier one of its group, and counted there.
    Suppressed,
}

string_forms!(AlertDeliveryStatus {
    Pending => "pending", Delivered => "delivered", Failed => "failed", Suppressed => "suppressed",
});

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T>(all: &[T], as_str: fn(T) -> &'static str, parse: fn(&str) -> Option<T>)
    where
        T: Copy + PartialEq + std::fmt::Debug + Serialize,
    {
        for value in all {
            assert_eq!(parse(as_str(*value)), Some(*value));
            assert_eq!(serde_json::to_value(value).unwrap(), as_str(*value));
        }
        assert_eq!(parse("nope"), None);
    }

    #[test]
    fn every_set_round_trips_through_the_names_serde_writes() {
        round_trip(Role::ALL, Role::as_str, Role::parse);
        round_trip(UserSource::ALL, UserSource::as_str, UserSource::parse);
        round_trip(JobKind::ALL, JobKind::as_str, JobKind::parse);
        round_trip(JobStatus::ALL, JobStatus::as_str, JobStatus::parse);
        round_trip(TriggerKind::ALL, TriggerKind::as_str, TriggerKind::parse);
        round_trip(DeliveryOutcome::ALL, DeliveryOutcome::as_str, DeliveryOutcome::parse);
        round_trip(WaitKind::ALL, WaitKind::as_str, WaitKind::parse);
        round_trip(AlertEvent::ALL, AlertEvent::as_str, AlertEvent::parse);
        round_trip(AlertDeliveryStatus::ALL, AlertDeliveryStatus::as_str, AlertDeliveryStatus::parse);
    }

    #[test]
    fn roles_are_ordered_from_viewer_to_admin_and_an_unknown_one_is_named() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Editor && Role::Editor < Role::Admin);
        assert_eq!("root".parse::<Role>(), Err("unknown role `root`; use viewer, operator, editor or admin".into()));
    }
}
