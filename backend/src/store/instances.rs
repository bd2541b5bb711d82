//! The engine's store: `InstanceStore` and its column lists here, its SQL in
//! `queries/instances.rs`. Two dialect differences come from each backend's `Backend` impl:
//! `LOCK_ROW` (`FOR NO KEY UPDATE` on Postgres: the per-instance and per-workflow locks that make
//! transitions and admission safe across processes) and `SKIP_LOCKED` (claims skip rows another
//! process is claiming). SQLite has one process, whose write transactions are serialized by the
//! store's `write_guard`.

use super::batch::{Step, StepDecide};
use super::instance_query::InstanceQuery;
use super::Recalled;
use super::{
    notice, AdmissionLimits, ChildRow, EngineGauges, Fence, InstanceRow, NewInstance, NodeRow, Refusable, Result,
    Snapshot, StartOutcome, StoredEvent, TransitionOutcome, Writes,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use trellis_model::InstanceStatus;
use uuid::Uuid;

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
    /// The oldest running (or paused) instance of `workflow`, with concurrency key `key` if
    /// given: the one a start under `on_limit: replace` cancels.
    async fn oldest_active(&self, workflow: Uuid, key: Option<&str>) -> Result<Option<Uuid>>;
    async fn get_instance(&self, id: Uuid) -> Result<Option<Snapshot>>;
    /// The instance as this process last wrote it, if it remembers it (`snapshots.rs`): what
    /// reading it would give unless another writer changed it since. For an attempt's
    /// expression context (the input and upstream outputs, which stay while it runs).
    fn remembered_instance(&self, id: Uuid) -> Option<Recalled>;
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

pub(super) const INSTANCE_COLUMNS: &str =
    "id, workflow_id, version, status, input, output, error, business_key, created_at, started_at, ended_at, \
     trace_id, parent_span_id, run, parent_instance_id, parent_node_id, parent_attempt, depth, concurrency_key, \
     handles_failure_of, failure_depth, throttle_key, priority, queue_order, started_by";
/// What reads an `InstanceRow` selects: the columns a start inserts, and the version counter.
pub(super) const INSTANCE_READ_COLUMNS: &str = concatcp!(INSTANCE_COLUMNS, ", rev");
pub(super) const NODE_COLUMNS: &str =
    "node_id, position, status, attempts, outcome, output, error, started_at, ended_at, dispatched_at, wait_kind, \
     wait_started_at";
/// The head of a multi-row insert of node rows (`bind_node_row` binds each row's values).
pub(super) const INSERT_NODES: &str = concatcp!("INSERT INTO instance_nodes (instance_id, ", NODE_COLUMNS, ") ");
/// History rows per INSERT: 5 binds each keeps a statement far below both backends' limits.
pub(super) const EVENTS_PER_INSERT: usize = 1_000;
pub(super) const WORK_COLUMNS: &str =
    "id, instance_id, kind, node_id, attempt, queue, payload, due_at, lease_owner, lease_epoch, lease_expires_at";

// The statements `queries/instances.rs` runs, named for what they do.
/// Every instance, before `InstanceQuery`'s filters.
pub(super) const INSTANCES: &str = concatcp!("SELECT ", INSTANCE_READ_COLUMNS, " FROM instances");
/// One instance's row.
pub(super) const INSTANCE: &str = concatcp!(INSTANCES, " WHERE id = $1");
pub(super) const SNAPSHOT_NODES: &str =
    concatcp!("SELECT ", NODE_COLUMNS, " FROM instance_nodes WHERE instance_id = $1 ORDER BY position");
pub(super) const WORKFLOWS_WITH_QUEUED: &str = "SELECT DISTINCT workflow_id FROM instances WHERE status = 'queued'";
pub(super) const INSTANCE_VERSIONS_OF: &str = "SELECT id, workflow_id, version FROM instances WHERE id IN (";
pub(super) const CHILDREN: &str =
    "SELECT id, parent_node_id, parent_attempt, status FROM instances WHERE parent_instance_id = $1 \
    ORDER BY id";
/// Instance ids are time-ordered (v7): the greatest is the latest run's handler.
pub(super) const FAILURE_HANDLER: &str =
    "SELECT id, workflow_id FROM instances WHERE handles_failure_of = $1 ORDER BY id DESC LIMIT 1";
pub(super) const EVENTS_AFTER: &str =
    "SELECT seq, kind, at, data FROM instance_events WHERE instance_id = $1 AND seq > $2 ORDER BY seq \
    LIMIT $3";
pub(super) const QUEUED_PER_WORKFLOW: &str =
    "SELECT workflow_id, COUNT(*) FROM instances WHERE status = 'queued' GROUP BY workflow_id";
pub(super) const COUNT_TIMERS: &str =
    "SELECT COUNT(*) FROM work WHERE kind IN ('resume', 'retry', 'node_timeout', 'instance_timeout')";
pub(super) const COUNT_INSTANCES: &str = "SELECT status, COUNT(*) FROM instances";
/// The oldest active instance of workflow `$1`; `$2` a concurrency key or null for any.
pub(super) const OLDEST_ACTIVE: &str = concatcp!(
    "SELECT id FROM instances WHERE workflow_id = $1 AND ($2 IS NULL OR concurrency_key = $2) AND status IN ",
    crate::store::statuses::ACTIVE,
    " ORDER BY id LIMIT 1"
);
