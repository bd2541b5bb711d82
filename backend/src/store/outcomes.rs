//! What the engine's store answers: how a start or a transition came out, where a queued
//! instance stands, what holds one back, and the gauges `/metrics` reads.

use super::instance_rows::StoredStart;
use super::writes::Writes;
use chrono::{DateTime, Utc};
use trellis_model::InstanceStatus;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq)]
pub enum StartOutcome {
    /// Admitted at once, at `at` (its `started_at`; `NewInstance::on_admit_at`). (A new
    /// instance's history starts at `seq` 1: `created_events`, then the queued or the
    /// admission entries.)
    Running {
        at: DateTime<Utc>,
    },
    Queued,
    /// The workflow (or the instance's concurrency key) is at its limit and refuses rather
    /// than queues.
    Rejected(Held),
    /// The workflow's `rate_limit` (its key's window) is full until `retry_at`; nothing was created.
    RateLimited {
        retry_at: DateTime<Utc>,
    },
    /// A start with the same Idempotency-Key was made before; nothing new was created.
    Repeated(StoredStart),
    /// Another instance with the business key is live (`None`: it ended just after
    /// refusing this one); nothing was created.
    KeyLive(Option<Uuid>),
    /// The key-reuse policy refuses the key because of this earlier instance.
    KeyUsed {
        id: Uuid,
        status: InstanceStatus,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum TransitionOutcome {
    Applied(Box<Writes>),
    /// The decision was to change nothing.
    Unchanged,
    /// The fence was stale: someone else holds (or finished) the work.
    Fenced,
    NotFound,
}

/// Connection pool use, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolStats {
    pub size: u32,
    pub idle: u32,
    pub max: u32,
}

/// Engine-wide numbers read from the database for `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct EngineGauges {
    pub queued_by_workflow: Vec<(Uuid, i64)>,
    /// Delays, retry backoffs and timeouts not yet fired.
    pub pending_timers: i64,
    pub pool: PoolStats,
    /// Instances this process remembers as it last wrote them, and their bytes (`snapshots.rs`).
    pub snapshots: usize,
    pub snapshot_bytes: usize,
}
/// Where a queued instance stands: instances ahead of it in its workflow's FIFO queue and
/// how many of the workflow's instances hold a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuePlace {
    pub ahead: i64,
    pub active: i64,
}

/// An outcome, or the limit that refused it.
pub type Refusable<T> = std::result::Result<T, Held>;

/// What holds back an instance that asks for a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// `max_concurrent_instances`, or earlier instances of the workflow waiting for it.
    Workflow,
    /// `max_per_key`, or earlier instances with the same key waiting for it.
    Key,
    /// The `throttle`'s window (its key's) is full, or earlier instances wait for it. Never
    /// refuses: a throttle always queues.
    Throttle,
}
