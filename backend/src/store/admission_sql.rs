//! Admission's SQL (the trait here, the statements in `shared/admission.rs`): starting an instance,
//! retrying a finished one and admitting queued ones, each under the workflow's lock
//! (`LOCK_ROW`), which is how `max_concurrent_instances`, `max_per_key` (FIFO; the slot
//! checks are in `slot_sql.rs`) and the business-key rules hold across processes. Each
//! transaction here can be chosen as a deadlock victim; the `InstanceStore` methods in
//! `engine_sql.rs` run them through `retry_transient`. The queue inspector's `queue_place`
//! and `key_queue_place` read the same queues.

use super::engine_records::QueuePlace;
use super::Result;
use async_trait::async_trait;
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
