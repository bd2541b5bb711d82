//! Committing one event: the transition, then what it set in motion — attempts leased to
//! this process run at once, the claim loop is woken for other new work, and a finished
//! instance frees its slot for a queued one.

use super::effects::{self, decide, Detail};
use super::machine::Event;
use super::plan::Plan;
use super::Engine;
use crate::store::{Fence, Snapshot, TransitionOutcome, WorkItem, Writes};
use chrono::Utc;
use std::sync::Arc;
use std::time::Duration;

/// Tries at committing one event before its work item is left to its lease.
const COMMIT_TRIES: u32 = 5;
/// The longest wait between two tries at a commit while the database is away.
pub(super) const OUTAGE_POLL: Duration = Duration::from_millis(250);
/// Attempts one transition may hand straight to this process's workers.
const PRELEASE_MAX: usize = 16;

/// Reserved worker slots, the ids their work items get, and their lease's end.
pub(super) struct Reservation {
    permits: Vec<tokio::sync::OwnedSemaphorePermit>,
    ids: Vec<uuid::Uuid>,
    until: chrono::DateTime<Utc>,
}

impl Reservation {
    /// Leases up to the reserved number of the attempts `writes` dispatches to `owner`.
    pub(super) fn lease_runs(&self, writes: &mut Writes, owner: &str) {
        effects::prelease(writes, owner, self.until, &self.ids);
    }
}

fn is_outage(e: &crate::store::StoreError) -> bool {
    e.trouble() == Some(crate::store::Trouble::Unavailable)
}

impl Engine {
    /// Commits one event as one transition and reacts to what it wrote. It runs detached, so
    /// a caller that goes away (an HTTP client hanging up) cannot strand what it dispatched,
    /// and it retries transient database failures: giving up would throw the attempt's
    /// result away and run it again under a new attempt number.
    pub(super) async fn commit(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: uuid::Uuid,
        fence: Option<&Fence>,
        event: Event,
        detail: Detail,
    ) -> anyhow::Result<TransitionOutcome> {
        let (engine, plan, fence) = (self.clone(), plan.clone(), fence.cloned());
        tokio::spawn(async move {
            // While the database is away the commit keeps trying, every `OUTAGE_POLL` at most,
            // until its lease would have ended (another process may take the work over then):
            // the result lands as soon as the database is back, not a lease later.
            let outage_deadline = std::time::Instant::now() + Duration::from_millis(engine.config.lease_ms);
            let mut delay = Duration::from_millis(50);
            for attempt in 1.. {
                match engine.try_commit(&plan, instance, fence.as_ref(), &event, &detail).await {
                    Ok(outcome) => return Ok(outcome),
                    Err(e)
                        if attempt < COMMIT_TRIES || (is_outage(&e) && std::time::Instant::now() < outage_deadline) =>
                    {
                        tracing::warn!(error = %e, attempt, "commit failed; retrying");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(OUTAGE_POLL);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            unreachable!("the loop returns")
        })
        .await?
    }

    async fn try_commit(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: uuid::Uuid,
        fence: Option<&Fence>,
        event: &Event,
        detail: &Detail,
    ) -> Result<TransitionOutcome, crate::store::StoreError> {
        let jitter = rand::random::<f64>();
        let reservation = self.reserve();
        let decide_fn = |s: &Snapshot| {
            let mut writes = decide(plan, s, event.clone(), detail, Utc::now(), jitter);
            reservation.lease_runs(&mut writes, &self.owner);
            writes
        };
        let outcome = self.store.transition(instance, fence, &decide_fn).await?;
        if let TransitionOutcome::Applied(writes) = &outcome {
            self.after_commit(plan, instance, writes, reservation).await;
        }
        Ok(outcome)
    }

    /// Worker slots (and work ids) for attempts a transition may dispatch, so this process
    /// can run them at once instead of inserting them for a later claim round trip.
    pub(super) fn reserve(&self) -> Reservation {
        let mut permits = Vec::new();
        if self.draining.load(std::sync::atomic::Ordering::SeqCst) {
            return Reservation { permits, ids: Vec::new(), until: Utc::now() };
        }
        // A quarter of the pool stays for claimed work, which takes turns between
        // workflows: a workflow feeding itself slots cannot starve the others.
        let kept_for_claims = self.config.workers / 4;
        while permits.len() < PRELEASE_MAX && self.permits.available_permits() > kept_for_claims {
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => permits.push(permit),
                Err(_) => break,
            }
        }
        let ids = (0..permits.len()).map(|_| uuid::Uuid::now_v7()).collect();
        Reservation { permits, ids, until: Utc::now() + self.lease() }
    }

    /// Runs the attempts a committed transition leased to this process.
    fn launch(self: &Arc<Self>, plan: &Arc<Plan>, instance: uuid::Uuid, writes: &Writes, mut reservation: Reservation) {
        let leased = writes.new_work.iter().filter(|w| w.lease.as_ref().is_some_and(|(owner, _)| *owner == self.owner));
        for work in leased {
            let (Some(id), Some(permit)) = (work.id, reservation.permits.pop()) else { break };
            let item = WorkItem {
                id,
                instance_id: instance,
                kind: work.kind,
                node_id: work.node_id.clone(),
                attempt: work.attempt,
                queue: None,
                payload: None,
                due_at: work.due_at,
                lease_owner: Some(self.owner.clone()),
                lease_epoch: 1,
                lease_expires_at: work.lease.as_ref().map(|(_, until)| *until),
            };
            let (engine, plan) = (self.clone(), plan.clone());
            tokio::spawn(async move {
                engine.handle(item, Some(plan)).await;
                drop(permit);
            });
        }
    }

    pub(super) async fn after_commit(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: uuid::Uuid,
        writes: &Writes,
        reservation: Reservation,
    ) {
        // Publish before launching: the launched attempt's own transition must not reach the
        // hub ahead of this one's entries, or followers would find a gap in the hub's ring and
        // all reread the history at once.
        if let Some(first) = writes.first_seq {
            self.bus.committed(instance, plan.workflow, first, &writes.events);
        }
        self.launch(plan, instance, writes, reservation);
        if writes.new_work.iter().any(|w| w.queue.is_none() && w.lease.is_none()) {
            self.wake.notify_one();
        }
        if writes.new_work.iter().any(|w| w.queue.is_some()) {
            self.task_wake.notify_waiters();
        }
        let finished = writes.instance.as_ref().is_some_and(|u| u.status.is_terminal());
        if finished && plan.instance_limit.is_some() {
            self.admit(plan.workflow).await;
        }
    }
}
