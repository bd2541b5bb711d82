//! This process's workers (`Workers`: its slots for node attempts and for timers, its name
//! in leases, whether it is draining), and the slots held for the attempts a transition is
//! about to dispatch, so this process runs them as soon as the transition commits instead of
//! inserting them for a later claim round trip. A leaf of the commit path: it owns the
//! worker pool and calls nothing back.

use super::effects::ms_duration;
use crate::store::Writes;
use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// Attempts one transition may hand straight to this process's workers (also bounded by the
/// free slots above the quarter kept for claims): a fan-out of 100 runs every branch it has
/// room for without a claim, and every branch run that way skips reading its instance.
pub(super) const PRELEASE_MAX: usize = 128;
/// Slots reserved for writes decided inside the store (a retry), before it is known how many
/// attempts they dispatch: few, so a retry holds no more than it is likely to use.
pub(super) const PRELEASE_UNDECIDED: usize = 16;

/// Reserved worker slots, the ids their work items get, and their lease's end.
pub(super) struct Reservation {
    pub permits: Vec<OwnedSemaphorePermit>,
    ids: Vec<Uuid>,
    until: DateTime<Utc>,
}

impl Reservation {
    /// Marks the first reserved number of the attempts `writes` dispatches as already leased
    /// to `owner`, with the reserved ids, so this process runs them without claiming them.
    pub(super) fn lease_runs(&self, writes: &mut Writes, owner: &str) {
        let runs = writes.new_work.iter_mut().filter(|w| w.is_unleased_run());
        for (work, id) in runs.zip(&self.ids) {
            work.id = Some(*id);
            work.lease = Some((owner.to_owned(), self.until));
        }
    }

    /// Its ids and lease without its slots (which `self` keeps holding): to lease, as
    /// `lease_runs` does, writes decided again later (a start's, admitted by the store).
    pub(super) fn leases_only(&self) -> Reservation {
        Reservation { permits: Vec::new(), ids: self.ids.clone(), until: self.until }
    }
}

/// The attempts `writes` dispatches that this process could run at once.
pub(super) fn runs_to_lease(writes: &Writes) -> usize {
    writes.new_work.iter().filter(|w| w.is_unleased_run()).count().min(PRELEASE_MAX)
}

/// This process's share of the work: the slots its node attempts run in and the timers it
/// holds, the name its leases carry, how long they last, and whether it still takes work.
pub(super) struct Workers {
    /// This process's identity in leases.
    pub owner: String,
    /// Node attempts run at once by this process (`EngineConfig::workers`).
    pub count: usize,
    lease_ms: u64,
    pub permits: Arc<Semaphore>,
    /// Timers this process holds (claimed, not yet applied; see `wheel.rs`).
    pub timer_slots: Arc<Semaphore>,
    /// Set on shutdown: no new attempts are handed to this process's workers.
    draining: AtomicBool,
}

impl Workers {
    pub(super) fn new(owner: String, count: usize, lease_ms: u64, timer_slots: usize) -> Workers {
        Workers {
            owner,
            count,
            lease_ms,
            permits: Arc::new(Semaphore::new(count.max(1))),
            timer_slots: Arc::new(Semaphore::new(timer_slots)),
            draining: AtomicBool::new(false),
        }
    }

    /// How long a claim holds work before another process may take it over.
    pub(super) fn lease(&self) -> chrono::Duration {
        ms_duration(self.lease_ms)
    }

    pub(super) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// No new attempts for this process from here on; running ones may finish.
    pub(super) fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Up to `wanted` free worker slots (and work ids) for attempts a transition may dispatch;
    /// none while draining.
    pub(super) fn reserve(&self, wanted: usize) -> Reservation {
        let mut permits = Vec::new();
        if self.draining() {
            return Reservation { permits, ids: Vec::new(), until: Utc::now() };
        }
        // A quarter of the pool stays for claimed work, which takes turns between
        // workflows: a workflow feeding itself slots cannot starve the others.
        let kept_for_claims = self.count / 4;
        while permits.len() < wanted.min(PRELEASE_MAX) && self.permits.available_permits() > kept_for_claims {
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => permits.push(permit),
                Err(_) => break,
            }
        }
        let ids = (0..permits.len()).map(|_| Uuid::now_v7()).collect();
        Reservation { permits, ids, until: Utc::now() + self.lease() }
    }
}

/// Up to `most` of `slots`' permits that are free now, without waiting for any.
pub(super) fn take_free(slots: &Arc<Semaphore>, most: usize) -> Vec<OwnedSemaphorePermit> {
    let mut permits = Vec::new();
    while permits.len() < most {
        match slots.clone().try_acquire_owned() {
            Ok(permit) => permits.push(permit),
            Err(_) => break,
        }
    }
    permits
}
