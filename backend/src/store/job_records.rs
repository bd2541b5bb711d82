//! Rows of the bulk jobs table (`jobs`) and what a job's batches write.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use trellis_model::{JobKind, JobStatus};
use uuid::Uuid;

/// A bulk action over the instances a filter matches, processed in batches.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: Uuid,
    pub kind: JobKind,
    /// The list filter as the client sent it (`workflow`, `status`, ...).
    pub filter: Json<Value>,
    pub status: JobStatus,
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
