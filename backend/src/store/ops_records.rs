//! Rows of the operations tables: bulk jobs and retention policies.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json;
use uuid::Uuid;

/// A bulk action over the instances a filter matches, processed in batches.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: Uuid,
    /// `purge` or `cancel`.
    pub kind: String,
    /// The list filter as the client sent it (`workflow`, `status`, ...).
    pub filter: Json<Value>,
    /// `queued`, `running`, `succeeded`, `failed`, `canceled`.
    pub status: String,
    pub matched: i64,
    pub processed: i64,
    pub failed: i64,
    pub error: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Keyset position: the last instance id a batch looked at.
    pub last_id: Option<Uuid>,
    /// The newest instance id the job may touch (an id made when the job was created).
    pub until_id: Uuid,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// Proof of holding a job's lease; progress written with a stale one changes nothing.
#[derive(Debug, Clone)]
pub struct JobLease {
    pub job: Uuid,
    pub owner: String,
    /// Renewed with every batch.
    pub until: DateTime<Utc>,
}

/// What one batch did, recorded with the job's progress.
#[derive(Debug, Clone, Default)]
pub struct BatchDone {
    /// The last id the batch looked at: the next batch starts after it.
    pub last_id: Option<Uuid>,
    pub processed: i64,
    pub failed: i64,
}

/// Days terminal instances are kept, per status, and (on the default policy only) days the
/// audit log is kept; `None` keeps them forever.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetentionPolicy {
    #[serde(default)]
    pub succeeded_days: Option<i32>,
    #[serde(default)]
    pub failed_days: Option<i32>,
    #[serde(default)]
    pub canceled_days: Option<i32>,
    #[serde(default)]
    pub timed_out_days: Option<i32>,
    /// The audit log's rows, by their time. Only the default policy sets it.
    #[serde(default)]
    pub audit_days: Option<i32>,
}

impl RetentionPolicy {
    /// (status, days) for every status the policy expires.
    pub fn ages(&self) -> impl Iterator<Item = (&'static str, i32)> {
        [
            ("succeeded", self.succeeded_days),
            ("failed", self.failed_days),
            ("canceled", self.canceled_days),
            ("timed_out", self.timed_out_days),
        ]
        .into_iter()
        .filter_map(|(status, days)| days.map(|d| (status, d)))
    }
}

/// What `DELETE /instances/{id}` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurgeOutcome {
    Purged,
    /// Not finished (its current status): it must be canceled first.
    NotTerminal(String),
    NotFound,
}

/// Where a queued instance stands: instances ahead of it in its workflow's FIFO queue and
/// how many of the workflow's instances hold a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuePlace {
    pub ahead: i64,
    pub active: i64,
}
