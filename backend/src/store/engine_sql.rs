//! The engine's store (`InstanceStore`'s column lists here, its SQL in `shared/instances.rs`). Two
//! dialect differences come from each backend's `Backend` impl: `LOCK_ROW` (`FOR NO KEY UPDATE` on
//! Postgres: the per-instance and per-workflow locks that make transitions and admission safe
//! across processes) and `SKIP_LOCKED` (claims skip rows another process is claiming). SQLite has
//! one process, whose write transactions are serialized by the store's `write_guard`.

pub(super) const INSTANCE_COLUMNS: &str =
    "id, workflow_id, version, status, input, output, error, business_key, created_at, started_at, ended_at, \
     trace_id, parent_span_id, run, parent_instance_id, parent_node_id, parent_attempt, depth, concurrency_key";
pub(super) const NODE_COLUMNS: &str =
    "node_id, position, status, attempts, outcome, output, error, started_at, ended_at, dispatched_at, wait_kind, \
     wait_started_at";
/// History rows per INSERT: 5 binds each keeps a statement far below both backends' limits.
pub(super) const EVENTS_PER_INSERT: usize = 1_000;
pub(super) const WORK_COLUMNS: &str =
    "id, instance_id, kind, node_id, attempt, queue, payload, due_at, lease_owner, lease_epoch, lease_expires_at";
