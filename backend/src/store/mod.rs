//! Persistence behind one trait, with a Postgres and a SQLite implementation.
//!
//! Both implementations run the same SQL (see `queries/mod.rs`): ids are UUIDs, times are bound
//! from Rust (never the database clock, so every process agrees on the format), and
//! definitions are JSON. Only connection setup and migrations differ per backend.

mod accounts;
mod admission;
mod alerts;
mod audit;
mod backend;
mod batch;
mod catalog;
mod content;
mod insights;
mod instance_query;
mod instance_rows;
mod instances;
mod job_records;
mod jobs;
mod lenient;
mod map_items;
pub mod notice;
mod outcomes;
mod pg_pool;
mod pg_setup;
pub mod phases;
mod postgres;
mod records;
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
mod trigger_records;
mod triggers;
mod views;
mod work;
mod work_records;
mod writes;

pub use accounts::{AccountStore, NewSession, SessionUser};
pub use admission::AdmissionQueue;
pub use alerts::{
    AfterAttempt, AlertAttemptRow, AlertDeliveryRow, AlertRuleRow, AlertStore, AlertedInstance, DueAlert, NewDelivery,
    SlowInstance,
};
pub use audit::{AuditQuery, AuditRow, AuditStore};
pub use batch::{absorb, Ahead, Step, StepDecide};
pub use insights::{DurationRanks, FailureGroupRow, FailureQuery, InsightStore, StatsQuery};
pub use instance_query::{parse_content, parse_statuses, InstanceQuery};
pub use instance_rows::*;
pub use job_records::*;
pub use jobs::JobStore;
pub use map_items::{MapItemCount, MapItemRow, MapItemWrites, MapStore};
pub use outcomes::*;
pub use pg_pool::POOL_WAITS;
pub use records::*;
pub use retention::{PurgeOutcome, RetentionPolicy, RetentionStore};
pub use secrets::{SecretChange, SecretInfo, SecretRow, SecretStore, WorkflowTexts, MASTER_KEY_CHECK};
pub use slow::{RunningNode, SlowStore, SlowThreshold, BASIS_P95, BASIS_STUCK_AFTER};
pub use sso::{OidcAttempt, OidcHandoff, SsoProfile, SsoStore};
pub use statuses::StatusSet;
pub use transient::{retry_transient, Trouble};
pub use trigger_records::*;
pub use triggers::TriggerStore;
pub use views::{ViewRow, ViewStore};
pub use work::WorkQueue;
pub use work_records::*;
pub use writes::*;

use crate::config::DatabaseConfig;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use trellis_model::{Definition, InstanceStatus};
use uuid::Uuid;

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

/// Decides, inside a transition's transaction, what to write given the locked snapshot.
pub type Decide<'a> = &'a (dyn Fn(&Snapshot) -> Writes + Send + Sync);

/// Decides a retry given the locked snapshot, whether a concurrency slot is free, and the time
/// it is recorded at (read holding the workflow's lock: see `queries/admission_clock.rs`).
pub type RetryDecide<'a> = &'a (dyn Fn(&Snapshot, bool, DateTime<Utc>) -> Writes + Send + Sync);

/// Decides the admission of a queued instance given its locked snapshot and the time it is
/// admitted at (read holding the workflow's lock: see `queries/admission_clock.rs`).
pub type AdmitDecide<'a> = &'a (dyn Fn(&Snapshot, DateTime<Utc>) -> Writes + Send + Sync);

/// The engine's persistence: instances, their nodes and their history.
#[async_trait]
pub trait InstanceStore: Send + Sync + 'static {
    /// Inserts an instance; under a concurrency limit (checked holding the workflow's lock)
    /// it runs at once, queues, or is rejected.
    async fn start_instance(&self, new: &NewInstance) -> Result<StartOutcome>;
    /// Starts without an Idempotency-Key or a business key, in one transaction: each decided
    /// and written as `start_instance` would, one after another. An error means none was.
    async fn start_instances(&self, news: &[&NewInstance]) -> Result<Vec<StartOutcome>>;
    /// One state change of one instance, holding its lock: consumes the fenced work item
    /// (if any; a stale fence changes nothing), then writes what `decide` returns.
    async fn transition(&self, instance: Uuid, fence: Option<&Fence>, decide: Decide<'_>) -> Result<TransitionOutcome>;
    /// Many state changes, of one or many instances, in one transaction (group commit): each
    /// step as `transition` would make it, the steps of one instance in order, each decided
    /// on what the earlier ones left. One outcome per step; an error means none was written.
    async fn transition_batch(&self, steps: &[Step<'_>], decide: StepDecide<'_>) -> Result<Vec<TransitionOutcome>>;
    /// A retry of a finished instance as one transition: under a concurrency limit it holds
    /// the workflow's lock (like a start) and tells `decide` whether a slot is free; the limit
    /// that held it back when there is none and the workflow refuses rather than queues. A
    /// retry that would make a second live instance with the same business key is a `Conflict`.
    /// `migrate`: first move the instance to this version with these node rows (all of them).
    async fn retry_instance(
        &self,
        id: Uuid,
        limits: AdmissionLimits,
        migrate: Option<(i64, &[NodeRow])>,
        decide: RetryDecide<'_>,
    ) -> Result<Refusable<TransitionOutcome>>;
    /// Admits the oldest queued instances of `workflow` into its free slots; returns each
    /// with what admitting it wrote.
    async fn admit_queued(
        &self,
        workflow: Uuid,
        limits: AdmissionLimits,
        decide: AdmitDecide<'_>,
    ) -> Result<Vec<(Uuid, Writes)>>;
    async fn workflows_with_queued(&self) -> Result<Vec<Uuid>>;
    async fn get_instance(&self, id: Uuid) -> Result<Option<Snapshot>>;
    /// The instance as this process last wrote it, if it remembers it (`snapshots.rs`): what
    /// reading it would give unless another writer changed it since. For an attempt's
    /// expression context (the input and upstream outputs, which stay while it runs).
    fn remembered_instance(&self, id: Uuid) -> Option<Snapshot>;
    /// (instance, workflow, version) of those of `ids` that exist: which plan each runs.
    async fn instance_versions(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Uuid, i64)>>;
    /// The child instances `parent`'s `subworkflow` nodes started, oldest first.
    async fn children(&self, parent: Uuid) -> Result<Vec<ChildRow>>;
    /// The latest failure handler run started for `failed`: (instance, workflow).
    async fn failure_handler(&self, failed: Uuid) -> Result<Option<(Uuid, Uuid)>>;
    async fn list_instances(&self, query: &InstanceQuery) -> Result<Vec<InstanceRow>>;
    async fn count_instances(&self, query: &InstanceQuery) -> Result<Vec<(InstanceStatus, i64)>>;
    /// Up to `limit` history entries of `instance` after `seq` `after`, in order.
    async fn events_after(&self, instance: Uuid, after: i64, limit: i64) -> Result<Vec<StoredEvent>>;
    async fn engine_gauges(&self) -> Result<EngineGauges>;
    /// Announcements of history entries other processes append (Postgres); `None` where
    /// there are no other processes (SQLite).
    async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<notice::Notice>>>;
}

/// Everything Trellis keeps. Methods are small and each runs in one transaction.
#[async_trait]
pub trait Store:
    InstanceStore
    + AdmissionQueue
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
{
    /// Which backend this is, for logs and `/readyz`.
    fn backend(&self) -> &'static str;
    async fn ping(&self) -> Result<()>;

    /// Returns the stored value of `key`, storing `value` first if there is none. Safe
    /// against concurrent callers: all of them get the value that won.
    async fn setting_or_init(&self, key: &str, value: &str) -> Result<String>;

    async fn count_users(&self) -> Result<i64>;
    /// Inserts a user; `false` if the username is taken.
    async fn insert_user(&self, user: &NewUser) -> Result<bool>;
    async fn user_by_name(&self, username: &str) -> Result<Option<UserRecord>>;
    async fn user_by_id(&self, id: Uuid) -> Result<Option<UserRecord>>;
    /// `false` if there is no such user. Ends every session of the user.
    async fn set_password(&self, username: &str, hash: &str) -> Result<bool>;

    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<()>;
    /// A live (not revoked) key with this hash.
    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>>;
    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRecord>>;
    /// `false` if there is no such live key.
    async fn revoke_api_key(&self, id: Uuid) -> Result<bool>;

    async fn create_workflow(&self, new: &NewWorkflow) -> Result<WorkflowRecord>;
    async fn list_workflows(&self, query: &WorkflowQuery) -> Result<Vec<WorkflowRecord>>;
    async fn get_workflow(&self, id: Uuid) -> Result<Option<WorkflowRecord>>;
    /// The names of those of `ids` that exist, for lists of instances.
    async fn workflow_names(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>>;
    async fn update_workflow(&self, id: Uuid, change: &WorkflowChange) -> Result<Option<WorkflowRecord>>;
    /// Replaces the draft if its revision is still `expected_rev` (`None`: any revision).
    async fn save_draft(&self, id: Uuid, expected_rev: Option<i64>, draft: &Definition) -> Result<WriteOutcome<i64>>;
    /// Freezes the draft as the next version if its revision is still `draft_rev`.
    async fn publish(&self, id: Uuid, draft_rev: i64, publish: &NewVersion) -> Result<WriteOutcome<i64>>;
    async fn list_versions(&self, workflow: Uuid) -> Result<Vec<VersionInfo>>;
    async fn get_version(&self, workflow: Uuid, version: i64) -> Result<Option<VersionRecord>>;
}

pub type DynStore = Arc<dyn Store>;

/// Opens the database named by `config`, creating it (SQLite) and applying migrations.
pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<DynStore> {
    let url = config.database_url.as_str();
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(postgres::PgStore::connect(config).await?))
    } else if url.starts_with("sqlite:") {
        Ok(Arc::new(sqlite::SqliteStore::connect(url, config.db_max_connections).await?))
    } else {
        anyhow::bail!("DATABASE_URL must start with sqlite:// or postgres://, got `{}`", redact_url(url))
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
