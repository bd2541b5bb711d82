//! Persistence behind one trait per topic (`<topic>.rs`), all of them together `Store`, with a
//! Postgres and a SQLite implementation. Callers that use one or a few topics are handed just
//! those traits (`Arc<dyn CatalogStore>`, ...; upcast from a `DynStore`).
//!
//! Both implementations run the same SQL (see `queries/mod.rs`): ids are UUIDs, times are bound
//! from Rust (never the database clock, so every process agrees on the format), and
//! definitions are JSON. Only connection setup and migrations differ per backend.

mod accounts;
mod admission;
mod alerts;
mod approvals;
mod audit;
mod backend;
mod batch;
mod brokers;
mod catalog;
mod cluster;
mod content;
mod debounces;
mod insights;
mod instance_query;
mod instance_rows;
mod instances;
mod jobs;
mod lenient;
mod limits;
mod map_items;
pub mod notice;
mod outcomes;
mod pg_pool;
mod pg_setup;
pub mod phases;
mod postgres;
mod retention;
mod secrets;
mod slots;
mod slow;
pub mod snapshots;
mod sqlite;
mod sso;
pub mod statuses;
pub(crate) mod transient;
mod transitions;
mod triggers;
mod views;
mod windows;
mod work;
mod writes;

pub use accounts::{AccountStore, ApiKeyRecord, NewSession, NewUser, SessionUser, UserRecord};
pub use admission::AdmissionQueue;
pub use alerts::{
    AfterAttempt, AlertAttemptRow, AlertDeliveryRow, AlertRuleRow, AlertStore, AlertedInstance, DueAlert, NewDelivery,
    SlowInstance,
};
pub use approvals::{ApprovalQuery, ApprovalRow, ApprovalStore, Decided, DecisionRow, NewApproval, Person, Refusal};
pub use audit::{AuditQuery, AuditRow, AuditStore};
pub use batch::{absorb, Ahead, Step, StepDecide};
pub use brokers::{BrokerStore, ConsumerRow};
pub use catalog::{
    CatalogStore, NewVersion, NewWorkflow, VersionInfo, VersionRecord, WorkflowChange, WorkflowQuery, WorkflowRecord,
    WriteOutcome,
};
pub use cluster::{BackupEnd, BackupRunRow, ClusterStore, HoldRow, ProcessRow};
pub use debounces::{due_at, DebounceRow, DebounceStore, Debounced, NewDebounce};
pub use insights::{DurationRanks, FailureGroupRow, FailureQuery, InsightStore, StatsQuery};
pub use instance_query::{parse_content, parse_statuses, InstanceQuery};
pub use instance_rows::*;
pub use instances::{AdmitDecide, Decide, InstanceStore, RetryDecide};
pub use jobs::{BatchDone, JobLease, JobRow, JobStore};
pub use limits::{
    limit_scope, LimitAnswer, LimitHolder, LimitRequest, LimitRow, LimitStore, LimitUse, LimitWait, Permit,
};
pub use map_items::{MapItemCount, MapItemRow, MapItemWrites, MapStore};
pub use outcomes::*;
pub use pg_pool::POOL_WAITS;
pub use retention::{PurgeOutcome, RetentionPolicy, RetentionStore};
pub use secrets::{SecretChange, SecretInfo, SecretRow, SecretStore, WorkflowTexts, MASTER_KEY_CHECK};
pub use slow::{RunningNode, SlowStore, SlowThreshold, BASIS_P95, BASIS_STUCK_AFTER};
pub use snapshots::Recalled;
pub use sso::{OidcAttempt, OidcHandoff, SsoProfile, SsoStore};
pub use statuses::StatusSet;
pub use transient::{retry_transient, Trouble};
pub use triggers::{
    DeliveryRow, FireDone, SecretRotation, TriggerChange, TriggerRow, TriggerStore, MAX_DELIVERY_REASON_BYTES,
};
pub use views::{ViewRow, ViewStore};
pub use windows::{rate_scope, throttle_scope, FlowWindows, RateCheck, ThrottlePlace, TimeWindow};
pub use work::{
    ChildEnd, Fence, NewWork, NextDue, NodeAttempt, RunEnd, UnreadableWork, Work, WorkColumns, WorkItem, WorkKind,
    WorkQueue,
};
pub use writes::*;

use crate::config::DatabaseConfig;
use async_trait::async_trait;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule was violated (the constraint is named for the caller to map).
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl StoreError {
    /// Turns a unique-constraint violation into [`StoreError::Conflict`].
    pub(crate) fn from_sqlx(e: sqlx::Error) -> Self {
        match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                StoreError::Conflict(db.constraint().unwrap_or("unique").to_owned())
            }
            _ => StoreError::Database(e),
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Everything Trellis keeps: every topic's trait, and what belongs to no topic (the backend's
/// name, a ping, settings). Methods are small and each runs in one transaction.
#[async_trait]
pub trait Store:
    InstanceStore
    + CatalogStore
    + AdmissionQueue
    + FlowWindows
    + DebounceStore
    + WorkQueue
    + TriggerStore
    + AuditStore
    + JobStore
    + RetentionStore
    + AccountStore
    + SsoStore
    + InsightStore
    + SecretStore
    + MapStore
    + ViewStore
    + SlowStore
    + AlertStore
    + ClusterStore
    + LimitStore
    + BrokerStore
    + ApprovalStore
{
    /// Which backend this is, for logs and `/readyz`.
    fn backend(&self) -> &'static str;
    async fn ping(&self) -> Result<()>;

    /// Returns the stored value of `key`, storing `value` first if there is none. Safe
    /// against concurrent callers: all of them get the value that won.
    async fn setting_or_init(&self, key: &str, value: &str) -> Result<String>;
}

pub type DynStore = Arc<dyn Store>;

// The statements `queries/mod.rs` runs for `Store` itself, named for what they do.
const PING: &str = "SELECT 1";
const INSERT_SETTING_IF_ABSENT: &str = "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";
const SETTING: &str = "SELECT value FROM settings WHERE key = $1";

/// Opens the database named by `config`, creating it (SQLite) and applying migrations.
pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<DynStore> {
    let url = config.database_url.as_str();
    if crate::store::is_postgres_url(url) {
        Ok(Arc::new(postgres::PgStore::connect(config).await?))
    } else if url.starts_with("sqlite:") {
        Ok(Arc::new(sqlite::SqliteStore::connect(url, config.db_max_connections).await?))
    } else {
        anyhow::bail!("DATABASE_URL must start with sqlite:// or postgres://, got `{}`", redact_url(url))
    }
}

/// The highest migration this build carries for `backend` (`sqlite` or `postgres`).
pub fn newest_migration(backend: &str) -> i64 {
    let migrator = match backend {
        "postgres" => sqlx::migrate!("../migrations/postgres"),
        _ => sqlx::migrate!("../migrations/sqlite"),
    };
    migrator.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Whether `url` names a Postgres database (else SQLite, or nothing Trellis opens).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The Postgres `url` with its database name replaced by `name`, keeping any query string.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let server = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{server}/{name}?{q}"),
        None => format!("{server}/{name}"),
    }
}

/// `url` without its password, for logs and error messages.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{}://{user}:***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}
