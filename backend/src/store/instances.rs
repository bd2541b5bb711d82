//! The engine's store (`InstanceStore`'s column lists here, its SQL in `queries/instances.rs`). Two
//! dialect differences come from each backend's `Backend` impl: `LOCK_ROW` (`FOR NO KEY UPDATE` on
//! Postgres: the per-instance and per-workflow locks that make transitions and admission safe
//! across processes) and `SKIP_LOCKED` (claims skip rows another process is claiming). SQLite has
//! one process, whose write transactions are serialized by the store's `write_guard`.

use const_format::concatcp;

pub(super) const INSTANCE_COLUMNS: &str =
    "id, workflow_id, version, status, input, output, error, business_key, created_at, started_at, ended_at, \
     trace_id, parent_span_id, run, parent_instance_id, parent_node_id, parent_attempt, depth, concurrency_key, \
     handles_failure_of, failure_depth";
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
