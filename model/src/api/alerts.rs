//! Alert rules (`/api/v1/alerts`): what to be told about, where to, and the delivery log.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a rule is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AlertWhen {
    /// An instance ended `failed`.
    Failed,
    /// An instance ended `timed_out`.
    TimedOut,
    /// A running instance has a node past its slow threshold (once per run).
    Slow,
    /// More than `threshold` instances queued, continuously for `for_ms`.
    QueueDepth,
    /// A scheduled backup (`TRELLIS_BACKUP_DIR`) failed.
    BackupFailed,
    /// An `approval` node asks people to decide (posted with a link to the approval's page).
    ApprovalRequested,
}

impl AlertWhen {
    pub const ALL: [AlertWhen; 6] = [
        AlertWhen::Failed,
        AlertWhen::TimedOut,
        AlertWhen::Slow,
        AlertWhen::QueueDepth,
        AlertWhen::BackupFailed,
        AlertWhen::ApprovalRequested,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlertWhen::Failed => "failed",
            AlertWhen::TimedOut => "timed_out",
            AlertWhen::Slow => "slow",
            AlertWhen::QueueDepth => "queue_depth",
            AlertWhen::BackupFailed => "backup_failed",
            AlertWhen::ApprovalRequested => "approval_requested",
        }
    }

    pub fn parse(text: &str) -> Option<AlertWhen> {
        AlertWhen::ALL.into_iter().find(|w| w.as_str() == text)
    }
}

impl From<AlertWhen> for crate::AlertEvent {
    fn from(when: AlertWhen) -> crate::AlertEvent {
        match when {
            AlertWhen::Failed => crate::AlertEvent::Failed,
            AlertWhen::TimedOut => crate::AlertEvent::TimedOut,
            AlertWhen::Slow => crate::AlertEvent::Slow,
            AlertWhen::QueueDepth => crate::AlertEvent::QueueDepth,
            AlertWhen::BackupFailed => crate::AlertEvent::BackupFailed,
            AlertWhen::ApprovalRequested => crate::AlertEvent::ApprovalRequested,
        }
    }
}

/// `POST /alerts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewAlertRule {
    pub name: String,
    pub when: AlertWhen,
    /// Only this workflow's instances (an id); absent for every workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Where deliveries are posted: an address the `http` node may reach.
    pub url: String,
    /// `queue_depth` only (required there): alert when more than this many instances queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<i64>,
    /// `queue_depth` only: for this long without a break, in ms (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_ms: Option<i64>,
    /// Within this many ms of a delivered failure, later failures of the same failure group
    /// are counted on it, not delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_ms: Option<i64>,
}

/// A rule as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertRule {
    pub id: String,
    pub name: String,
    pub when: AlertWhen,
    pub workflow: Option<String>,
    pub workflow_name: Option<String>,
    /// Where deliveries go; to a caller who does not manage the rule, only its scheme and host
    /// (`https://hooks.slack.com/…`): a receiver URL is a credential.
    pub url: String,
    pub threshold: Option<i64>,
    pub for_ms: Option<i64>,
    pub dedupe_ms: Option<i64>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// Whether the caller may test and delete it: its creator and admins.
    #[serde(default)]
    pub can_manage: bool,
}

/// The answer to a create: the rule and its signing secret (`whsec_...`), shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedAlertRule {
    #[serde(flatten)]
    pub rule: AlertRule,
    pub secret: String,
}

/// One alert to deliver, and how its delivery went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertDelivery {
    pub id: String,
    pub event: crate::AlertEvent,
    pub instance_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub status: crate::AlertDeliveryStatus,
    /// Later failures of the same group counted on this one within the dedupe window.
    pub suppressed: i64,
    pub attempts: Vec<AlertAttempt>,
}

/// One try at posting a delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertAttempt {
    pub attempt: i32,
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<i32>,
    /// Why there is no 2xx: no answer in time, no connection, ...
    pub error: Option<String>,
}

/// The answer to `POST /alerts/{id}/test`: one signed test delivery, sent now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertTestResult {
    pub delivered: bool,
    pub attempt: AlertAttempt,
    pub delivery: String,
}
