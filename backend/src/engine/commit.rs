//! Committing one event: the transition, then what it set in motion — attempts leased to
//! this process run at once, the claim loop is woken for other new work, and a finished
//! instance frees its slot for a queued one.

use super::committer::CommitRequest;
use super::effects::{self, Detail};
use super::machine::Event;
use super::plan::Plan;
use super::Engine;
use crate::store::{Fence, TransitionOutcome, Trouble, WorkItem, Writes};
use chrono::Utc;
use std::sync::Arc;
use std::time::Duration;

/// Tries at committing one event before its work item is left to its lease.
const COMMIT_TRIES: u32 = 5;
/// The longest wait between two tries at a commit while the database is away.
pub(super) const OUTAGE_POLL: Duration = Duration::from_millis(250);
/// Attempts one transition may hand straight to this process's workers.
pub(super) const PRELEASE_MAX: usize = 16;

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

impl Engine {
    /// Commits one event as one transition (through a commit lane, batched with whatever else
    /// is ready) and reacts to what it wrote. It runs detached, so a caller that goes away (an
    /// HTTP client hanging up) cannot strand what it dispatched, and it retries transient
    /// database failures: giving up would throw the attempt's result away and run it again
    /// under a new attempt number.
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
                let (reply, answer) = tokio::sync::oneshot::channel();
                let request = CommitRequest {
                    plan: plan.clone(),
                    instance,
                    fence: fence.clone(),
                    event: event.clone(),
                    detail: detail.clone(),
                    jitter: rand::random::<f64>(),
                    reply,
                };
                if engine.lanes.get().is_none_or(|lanes| !lanes.submit(request)) {
                    anyhow::bail!("the engine is shutting down");
                }
                match answer.await {
                    Ok(Ok(outcome)) => return Ok(outcome),
                    Ok(Err(e))
                        if attempt < COMMIT_TRIES
                            || (e.trouble == Some(Trouble::Unavailable)
                                && std::time::Instant::now() < outage_deadline) =>
                    {
                        tracing::warn!(error = %e, attempt, "commit failed; retrying");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(OUTAGE_POLL);
                    }
                    Ok(Err(e)) => return Err(e.into()),
                    Err(_) => anyhow::bail!("the commit lane stopped"),
                }
            }
            unreachable!("the loop returns")
        })
        .await?
    }

    /// Worker slots (and work ids) for attempts a transition may dispatch, so this process
    /// can run them at once instead of inserting them for a later claim round trip.
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

    /// Reacts to a committed transition and admits queued instances into a slot it freed.
    pub(super) async fn after_commit(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: uuid::Uuid,
        writes: &Writes,
        reservation: Reservation,
    ) {
        if self.react(plan, instance, writes, reservation) {
            self.admit(plan.workflow).await;
        }
    }

    /// Publishes a committed transition's entries and runs, or wakes whoever runs, the work
    /// it created. True if it finished an instance of a workflow with an instance or key limit:
    /// a slot is free for a queued instance.
    pub(super) fn react(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: uuid::Uuid,
        writes: &Writes,
        reservation: Reservation,
    ) -> bool {
        // Publish before launching: the launched attempt's own transition must not reach the
        // hub ahead of this one's entries, or followers would find a gap in the hub's ring and
        // all reread the history at once.
        if let Some(first) = writes.first_seq {
            self.bus.committed(instance, plan.workflow, first, &writes.events);
        }
        self.launch(plan, instance, writes, reservation);
        // A finished child's wake of its parent is due at once, like new work of its own.
        if writes.wake.is_some() || writes.new_work.iter().any(|w| w.queue.is_none() && w.lease.is_none()) {
            self.wake.notify_one();
        }
        if writes.new_work.iter().any(|w| w.queue.is_some()) {
            self.task_wake.notify_waiters();
        }
        let finished = writes.instance.as_ref().is_some_and(|u| u.status.is_terminal());
        // The limits are the latest version's, which may not be this instance's.
        finished && (plan.admission().any() || self.limits_admission(plan.workflow))
    }
}
