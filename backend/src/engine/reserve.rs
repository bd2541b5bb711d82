//! Worker slots held for the attempts a transition is about to dispatch, so this process runs
//! them as soon as the transition commits instead of inserting them for a later claim round
//! trip. A leaf of the commit path: it reads the worker pool and calls nothing back.

use super::Engine;
use crate::store::Writes;
use chrono::{DateTime, Utc};
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

impl Engine {
    /// Up to `wanted` free worker slots (and work ids) for attempts a transition may dispatch;
    /// none while draining.
    pub(super) fn reserve(&self, wanted: usize) -> Reservation {
        let mut permits = Vec::new();
        if self.draining.load(std::sync::atomic::Ordering::SeqCst) {
            return Reservation { permits, ids: Vec::new(), until: Utc::now() };
        }
        // A quarter of the pool stays for claimed work, which takes turns between
        // workflows: a workflow feeding itself slots cannot starve the others.
        let kept_for_claims = self.config.workers / 4;
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
