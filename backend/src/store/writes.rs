//! What one transition of the engine reads and writes: the locked snapshot, the instance's
//! update, the rows and history entries it adds, the work it makes ready; a new instance with
//! the limits its admission is held to.

use super::instance_rows::{InstanceRow, NewEvent, NodeRow};
use super::work::NewWork;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::sync::Arc;
use trellis_model::InstanceStatus;
use uuid::Uuid;

/// An instance with its nodes in plan order, as a transition sees it. The rows are shared:
/// copying a snapshot (a batch's from the remembered one, an attempt's, a run ahead's) copies
/// pointers, not outputs, and a write replaces the rows it changes — so what a transition
/// costs does not grow with its instance's width.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub instance: InstanceRow,
    pub nodes: Vec<Arc<NodeRow>>,
}

impl Snapshot {
    /// The row of the node at plan position `i`. Rows are kept in plan order, so it is looked
    /// up by index first (a search per changed node made a wide fan-out's dispatch quadratic).
    pub fn row_at(&self, i: usize) -> Option<&NodeRow> {
        match self.nodes.get(i) {
            Some(row) if row.position as usize == i => Some(row),
            _ => self.nodes.iter().find(|r| r.position as usize == i).map(|r| &**r),
        }
    }

    /// Where the row of node `id`, written at plan position `position`, sits: at that index
    /// when it is there (rows are in plan order), else wherever its id is.
    pub fn index_of(&self, id: &str, position: i32) -> Option<usize> {
        let at = position as usize;
        match self.nodes.get(at) {
            Some(row) if row.node_id == id => Some(at),
            _ => self.nodes.iter().position(|r| r.node_id == id),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct InstanceUpdate {
    pub status: InstanceStatus,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// Of a failure: the node that failed (none for an instance timeout) and the error's class.
    pub failure: Option<(Option<String>, String)>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// A retry: the next run begins, so the last run's end, output and error are cleared
    /// and `started_at` is replaced rather than kept.
    pub restart: bool,
}

/// Everything one transition writes, committed together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Writes {
    pub instance: Option<InstanceUpdate>,
    /// Whole rows replacing the stored ones (matched by node id).
    pub nodes: Vec<NodeRow>,
    pub new_work: Vec<NewWork>,
    /// Remove the instance's remaining work: it has finished.
    pub clear_work: bool,
    /// Attempts that just ended (node id, attempt): their leftover work (the run item of a
    /// timed-out attempt, its timeout timer, its task) is removed, so late results from
    /// them are fenced out.
    pub ended_attempts: Vec<(String, i32)>,
    /// History entries, numbered by the store in this order.
    pub events: Vec<NewEvent>,
    /// Set by the store once written: the `seq` of `events[0]`.
    pub first_seq: Option<i64>,
    /// A work item for another instance: the parent a finishing child wakes. Inserted only
    /// if that instance still exists (a purged parent is not an error).
    pub wake: Option<(Uuid, NewWork)>,
    /// A retry from the start: the results of the instance's `map` items are forgotten, so
    /// every item runs again (only a retry writes it; see `retry_instance`).
    pub forget_map_items: bool,
}

impl Writes {
    pub fn is_empty(&self) -> bool {
        self.instance.is_none()
            && self.nodes.is_empty()
            && self.new_work.is_empty()
            && !self.clear_work
            && self.ended_attempts.is_empty()
            && self.wake.is_none()
            // A history entry alone (a note on an ended instance) is a change too.
            && self.events.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct NewInstance {
    pub row: InstanceRow,
    pub nodes: Vec<NodeRow>,
    /// The workflow's concurrency limits, and whether to reject beyond them.
    pub limits: AdmissionLimits,
    /// The workflow's business-key policy (checked only when the row has a key).
    pub key_reuse: trellis_model::KeyReuse,
    /// The workflow's `rate_limit` and this start's key in it: checked before anything else
    /// limits it, so a refused start creates nothing.
    pub rate: Option<super::RateCheck>,
    /// What starting it writes, applied if it is admitted at once, decided at `admits_at`.
    pub on_admit: Writes,
    /// The clock reading `on_admit` was decided at (its `created_at`).
    pub admits_at: DateTime<Utc>,
    /// Decides `on_admit` again at a later time: a limited start is admitted at a time the
    /// store reads holding the workflow's lock (`queries/admission_clock.rs`).
    pub admit_at: AdmitAt,
    /// The request's `Idempotency-Key` and a hash of the request, if it had one.
    pub idempotency: Option<(String, String)>,
    /// History entries of creating it; `queued_events` follow if it has to wait for a slot.
    pub created_events: Vec<NewEvent>,
    pub queued_events: Vec<NewEvent>,
}

impl NewInstance {
    /// What admitting it at `at` writes: `on_admit` if that is when it was decided.
    pub fn on_admit_at(&self, at: DateTime<Utc>) -> Writes {
        match at == self.admits_at {
            true => self.on_admit.clone(),
            false => (self.admit_at.0)(at),
        }
    }
}

/// What admitting a new instance at a given time writes (decided by the engine).
#[derive(Clone)]
pub struct AdmitAt(pub std::sync::Arc<dyn Fn(DateTime<Utc>) -> Writes + Send + Sync>);

impl std::fmt::Debug for AdmitAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdmitAt")
    }
}

/// The limits admission holds a workflow's instances to: those of its latest version.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// `max_concurrent_instances`.
    pub instances: Option<u32>,
    /// `max_per_key`, when the workflow has a `concurrency_key`.
    pub per_key: Option<u32>,
    /// `on_limit: reject`: a start beyond a limit is refused rather than queued.
    pub reject: bool,
    /// `throttle`: at most so many admissions per period (per throttle key).
    pub throttle: Option<super::TimeWindow>,
    /// `on_limit: replace` (with `reject` set: the store refuses, the engine then cancels the
    /// oldest competing instance and starts again).
    pub replace: bool,
}

impl AdmissionLimits {
    /// Whether admission has anything to hold back: a start or retry must ask for a slot.
    pub fn any(&self) -> bool {
        self.instances.is_some() || self.per_key.is_some() || self.throttle.is_some()
    }

    /// Whether an instance ending can let a queued one in: only slots free up that way (a
    /// throttle's window opens with time, and its admission is booked for then).
    pub fn has_slots(&self) -> bool {
        self.instances.is_some() || self.per_key.is_some()
    }
}
