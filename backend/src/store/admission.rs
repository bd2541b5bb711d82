//! Admission's SQL (the trait here, the statements in `queries/admission.rs`): starting an instance,
//! retrying a finished one and admitting queued ones, each under the workflow's lock
//! (`LOCK_ROW`), which is how `max_concurrent_instances`, `max_per_key` (FIFO; the slot
//! checks are in `slots.rs`) and the business-key rules hold across processes. Each
//! transaction here can be chosen as a deadlock victim; the `InstanceStore` methods in
//! `instances.rs` run them through `retry_transient`. The queue inspector's `queue_place`
//! and `key_queue_place` read the same queues.

use super::instances::INSTANCE_COLUMNS;
use super::slots::{ADMISSIBLE_QUEUED, RUNNING_WITH_BOUND_KEY};
use super::statuses::ACTIVE;
use super::QueuePlace;
use super::Result;
use async_trait::async_trait;
use const_format::concatcp;
use uuid::Uuid;

/// The FIFO queues of instances waiting for a slot: the workflow's, and each concurrency key's.
#[async_trait]
pub trait AdmissionQueue: Send + Sync + 'static {
    /// Where a queued instance stands in its workflow's queue; with `per_key`, instances
    /// held by their own concurrency key are not counted ahead of it.
    async fn queue_place(&self, workflow: Uuid, id: Uuid, per_key: Option<u32>) -> Result<QueuePlace>;
    /// Where a queued instance stands among those with its concurrency `key`: how many with
    /// it were queued before it, and how many with it run now.
    async fn key_queue_place(&self, workflow: Uuid, key: &str, id: Uuid) -> Result<QueuePlace>;
}

// The statements `queries/admission.rs` runs, named for what they do.
pub(super) const LIVE_WITH_KEY: &str = concatcp!(
    "SELECT id FROM instances WHERE workflow_id = $1 AND business_key = $2 AND status IN ",
    crate::store::statuses::UNFINISHED
);
/// New instances: each row bound whole (status `queued`, run 1, no output, error or times yet).
pub(super) const INSERT_INSTANCES: &str = concatcp!("INSERT INTO instances (", INSTANCE_COLUMNS, ") ");
/// Slots new starts of a workflow may take: none while any instance waits for one (it is
/// ahead of them), else the limit less those active.
pub(super) const ROOM_FOR_STARTS: &str = concatcp!(
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM instances WHERE workflow_id = $1 AND status = 'queued') THEN 0 \
     ELSE $2 - (SELECT COUNT(*) FROM (SELECT 1 FROM instances WHERE workflow_id = $1 AND status IN ",
    ACTIVE,
    " LIMIT $2) a) END"
);
pub(super) const INSERT_NEW_NODES: &str =
    "INSERT INTO instance_nodes (instance_id, node_id, position, status, attempts) ";
pub(super) const CLAIM_START_REQUEST: &str =
    "INSERT INTO start_requests (workflow_id, idempotency_key, request_hash, instance_id, status, \
    version, created_at) VALUES ($1, $2, $3, $4, 'queued', $5, $6) ON CONFLICT (workflow_id, \
    idempotency_key) DO NOTHING";
pub(super) const FIRST_START_REQUEST: &str =
    "SELECT request_hash, instance_id, status, version FROM start_requests WHERE workflow_id = $1 AND \
    idempotency_key = $2";
pub(super) const MARK_START_RUNNING: &str =
    "UPDATE start_requests SET status = 'running' WHERE workflow_id = $1 AND idempotency_key = $2";
pub(super) const SET_INSTANCE_VERSION: &str = "UPDATE instances SET version = $1 WHERE id = $2";
pub(super) const DELETE_INSTANCE_NODES: &str = "DELETE FROM instance_nodes WHERE instance_id = $1";
pub(super) const OLDEST_QUEUED: &str =
    "SELECT id FROM instances WHERE workflow_id = $1 AND status = 'queued' ORDER BY queue_order, id LIMIT $2";
pub(super) const COUNT_ACTIVE: &str =
    concatcp!("SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status IN ", ACTIVE);
pub(super) const QUEUED_AHEAD: &str = concatcp!(
    "SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status = 'queued' AND (queue_order, id) < ",
    IN_LINE_AT_2
);
/// Where instance `$2` stands in admission's order (`queue_order`, then id), for comparing rows with.
const IN_LINE_AT_2: &str = "(SELECT queue_order, id FROM instances WHERE id = $2)";
const IN_LINE_AT_3: &str = "(SELECT queue_order, id FROM instances WHERE id = $3)";
/// The latest instance that used a business key, which `RejectDuplicate` refuses it for.
pub(super) const LATEST_WITH_KEY: &str =
    "SELECT id, status FROM instances WHERE workflow_id = $1 AND business_key = $2 ORDER BY id DESC LIMIT 1";
/// The latest instance that used a business key and succeeded, which `AllowDuplicateFailedOnly`
/// refuses it for.
pub(super) const LATEST_SUCCEEDED_WITH_KEY: &str = "SELECT id, status FROM instances WHERE workflow_id = $1 \
    AND business_key = $2 AND status = 'succeeded' ORDER BY id DESC LIMIT 1";
pub(super) const QUEUED_AHEAD_UNDER_KEYS: &str =
    concatcp!("SELECT COUNT(*) FROM (", ADMISSIBLE_QUEUED, ") w WHERE (w.queue_order, w.id) < ", IN_LINE_AT_3);
pub(super) const KEY_QUEUE_PLACE: &str = concatcp!(
    "SELECT (SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND concurrency_key = $2 AND status = \
     'queued' AND (queue_order, id) < ",
    IN_LINE_AT_3,
    "), ",
    RUNNING_WITH_BOUND_KEY
);
