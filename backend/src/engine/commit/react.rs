//! Step 5 of a transition (see `commit/mod.rs`): publish what it wrote, run the attempts it
//! leased to this process (through the runner handed in, `RunLeased`), wake whoever waits for
//! its other work, and admit queued instances into a slot it freed.

use super::super::plan::Plan;
use super::super::reserve::Reservation;
use super::{CommitRequest, Committer, Written};
use crate::store::phases::PHASES;
use crate::store::{TransitionOutcome, Work, WorkItem, Writes};
use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use uuid::Uuid;

// Step 5: react.
impl Committer {
    /// Reacts to a written batch in commit order, then answers its requests. Those that
    /// finished an instance of a limited workflow are answered once queued instances were
    /// admitted into the freed slots (once per workflow), off the lane.
    pub(super) async fn react_to_batch(self: &Arc<Self>, batch: Vec<CommitRequest>, (outcomes, reservations): Written) {
        let mut admit = BTreeSet::new();
        let mut after_admission = Vec::new();
        for ((request, outcome), reservation) in batch.into_iter().zip(outcomes).zip(reservations) {
            if request.ahead.is_some() {
                PHASES.ran_ahead(matches!(outcome, TransitionOutcome::Applied(_)));
            }
            if let TransitionOutcome::Applied(writes) = &outcome {
                let reservation = reservation.unwrap_or_else(|| self.workers.reserve(0));
                if self.react(&request.plan, request.instance, writes, reservation) {
                    admit.insert(request.plan.workflow);
                    after_admission.push((request.reply, outcome));
                    continue;
                }
            }
            let _ = request.reply.send(Ok(outcome));
        }
        if admit.is_empty() {
            return;
        }
        let admission = self.admission.clone();
        tokio::spawn(async move {
            for workflow in admit {
                admission.admit(workflow).await;
            }
            for (reply, outcome) in after_admission {
                let _ = reply.send(Ok(outcome));
            }
        });
    }

    /// Step 5 for a transition written outside the lanes (a start, a retry): reacts, then
    /// admits queued instances into a slot it freed.
    pub(in crate::engine) async fn react_and_admit(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: Uuid,
        writes: &Writes,
        reservation: Reservation,
    ) {
        if self.react(plan, instance, writes, reservation) {
            self.admission.admit(plan.workflow).await;
        }
    }

    /// Asks for an admission of `workflow` without waiting for it: a start a throttle queued
    /// is admitted when its window opens, which the admission books (`window_wakes.rs`).
    pub(in crate::engine) fn admit_soon(&self, workflow: Uuid) {
        let admission = self.admission.clone();
        tokio::spawn(async move { admission.admit(workflow).await });
    }

    /// Publishes a committed transition's entries and runs, or wakes whoever runs, the work
    /// it created. True if it finished an instance of a workflow with an instance or key limit:
    /// a slot is free for a queued instance.
    fn react(self: &Arc<Self>, plan: &Arc<Plan>, instance: Uuid, writes: &Writes, reservation: Reservation) -> bool {
        // Publish before launching: the launched attempt's own transition must not reach the
        // hub ahead of this one's entries, or followers would find a gap in the hub's ring and
        // all reread the history at once.
        if let Some(first) = writes.first_seq {
            self.bus.committed(instance, plan.workflow, first, &writes.events);
        }
        self.launch(plan, instance, writes, reservation);
        // A finished child's wake of its parent is due at once, like new work of its own.
        if writes.wake.is_some()
            || writes.new_work.iter().any(|w| !matches!(w.work, Work::Task { .. }) && w.lease.is_none())
        {
            self.wakes.claims.notify_one();
        }
        if writes.new_work.iter().any(|w| matches!(w.work, Work::Task { .. })) {
            self.wakes.tasks.notify_waiters();
        }
        let finished = writes.instance.as_ref().is_some_and(|u| u.status.is_terminal());
        // The limits are the latest version's, which may not be this instance's.
        finished && (plan.admission().has_slots() || self.plans.limit_admission(plan.workflow))
    }

    /// Runs the attempts a committed transition leased to this process.
    fn launch(self: &Arc<Self>, plan: &Arc<Plan>, instance: Uuid, writes: &Writes, mut reservation: Reservation) {
        let leased =
            writes.new_work.iter().filter(|w| w.lease.as_ref().is_some_and(|(owner, _)| *owner == self.workers.owner));
        for work in leased {
            let (Some(id), Some(permit)) = (work.id, reservation.permits.pop()) else { break };
            let item = WorkItem {
                id,
                instance_id: instance,
                work: Ok(work.work.clone()),
                due_at: work.due_at,
                lease_owner: Some(self.workers.owner.clone()),
                lease_epoch: 1,
                lease_expires_at: work.lease.as_ref().map(|(_, until)| *until),
            };
            let Some(runner) = self.runner.get().and_then(Weak::upgrade) else { break };
            runner.run_leased(item, plan.clone(), permit);
        }
    }
}
