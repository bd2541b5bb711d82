//! Group commit, the engine's half. Outcomes are not committed one transaction each: they
//! go to a commit lane, which takes every request waiting for it — whatever arrived while
//! its previous batch was committing, up to `MAX_BATCH` — and commits them as one batch
//! (`InstanceStore::transition_batch`): one transaction and one durable write for all of them.
//! An idle lane commits a lone request at once, so batching adds no latency; under load the
//! batches grow by themselves. A lane is picked by instance, so one instance's outcomes (the
//! branches of a fan-out) meet in the same lane and are applied under one lock.

use super::commit::{Reservation, PRELEASE_MAX};
use super::effects::{decide, Detail};
use super::machine::Event;
use super::plan::Plan;
use super::Engine;
use crate::store::{Fence, Snapshot, Step, StoreError, TransitionOutcome, Trouble, WorkKind, Writes};
use chrono::Utc;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

/// Most outcomes committed in one batch.
const MAX_BATCH: usize = 256;

/// An outcome waiting to be committed, and where to say how it went.
pub(super) struct CommitRequest {
    pub plan: Arc<Plan>,
    pub instance: Uuid,
    pub fence: Option<Fence>,
    pub event: Event,
    pub detail: Detail,
    /// In [0, 1): spreads retry delays.
    pub jitter: f64,
    pub reply: oneshot::Sender<Result<TransitionOutcome, CommitFailed>>,
}

/// Why a batch holding the request was not committed (nothing of it was written).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(super) struct CommitFailed {
    pub message: String,
    pub trouble: Option<Trouble>,
}

impl From<&StoreError> for CommitFailed {
    fn from(e: &StoreError) -> Self {
        CommitFailed { message: e.to_string(), trouble: e.trouble() }
    }
}

/// The senders of this process's commit lanes.
pub(super) struct Lanes(Vec<mpsc::UnboundedSender<CommitRequest>>);

impl Lanes {
    /// `count` lanes, each committing on its own task for as long as `engine` lives.
    pub(super) fn spawn(engine: &Arc<Engine>, count: usize) -> Lanes {
        let senders = (0..count.max(1))
            .map(|_| {
                let (sender, receiver) = mpsc::unbounded_channel();
                tokio::spawn(run_lane(Arc::downgrade(engine), receiver));
                sender
            })
            .collect();
        Lanes(senders)
    }

    /// Hands `request` to its instance's lane. False if the lane is gone (shutting down).
    pub(super) fn submit(&self, request: CommitRequest) -> bool {
        let lane = (request.instance.as_u128() % self.0.len() as u128) as usize;
        self.0[lane].send(request).is_ok()
    }
}

async fn run_lane(engine: Weak<Engine>, mut requests: mpsc::UnboundedReceiver<CommitRequest>) {
    while let Some(first) = requests.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match requests.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let Some(engine) = engine.upgrade() else { return };
        engine.commit_batch(batch).await;
    }
}

/// The attempts `writes` dispatches that this process could run at once.
fn runs_to_lease(writes: &Writes) -> usize {
    writes.new_work.iter().filter(|w| w.kind == WorkKind::Run && w.lease.is_none()).count().min(PRELEASE_MAX)
}

type Committed = (Vec<TransitionOutcome>, Vec<Option<Reservation>>);

impl Engine {
    /// Commits a batch; if it fails and holds several instances, commits them one by one, so
    /// one instance's trouble does not keep the others' outcomes from landing.
    async fn commit_batch(self: &Arc<Self>, batch: Vec<CommitRequest>) {
        let instances: BTreeSet<Uuid> = batch.iter().map(|r| r.instance).collect();
        match self.try_batch(&batch).await {
            Ok(done) => self.settle(batch, done).await,
            Err(e) if instances.len() > 1 => {
                tracing::warn!(error = %e, steps = batch.len(), "a batch failed; committing its instances one by one");
                let mut groups: Vec<Vec<CommitRequest>> = instances.iter().map(|_| Vec::new()).collect();
                for request in batch {
                    let at = instances.iter().position(|id| *id == request.instance).unwrap_or_default();
                    groups[at].push(request);
                }
                for group in groups {
                    match self.try_batch(&group).await {
                        Ok(done) => self.settle(group, done).await,
                        Err(e) => fail(group, &e),
                    }
                }
            }
            Err(e) => fail(batch, &e),
        }
    }

    async fn try_batch(&self, batch: &[CommitRequest]) -> Result<Committed, StoreError> {
        let steps: Vec<Step<'_>> =
            batch.iter().map(|r| Step { instance: r.instance, fence: r.fence.as_ref() }).collect();
        let reservations: Vec<Mutex<Option<Reservation>>> = batch.iter().map(|_| Mutex::new(None)).collect();
        let decide_step = |i: usize, snapshot: &Snapshot| {
            let r = &batch[i];
            let mut writes = decide(&r.plan, snapshot, r.event.clone(), &r.detail, Utc::now(), r.jitter);
            let reservation = self.reserve(runs_to_lease(&writes));
            reservation.lease_runs(&mut writes, &self.owner);
            // A batch run again (a deadlock victim) decides again: the first run's slots go back.
            *reservations[i].lock().expect("reservation slot") = Some(reservation);
            writes
        };
        let outcomes = self.store.transition_batch(&steps, &decide_step).await?;
        let reservations = reservations.into_iter().map(|slot| slot.into_inner().expect("reservation slot")).collect();
        Ok((outcomes, reservations))
    }

    /// Reacts to a committed batch in commit order, then answers its requests. Those that
    /// finished an instance of a limited workflow are answered once queued instances were
    /// admitted into the freed slots (once per workflow), off the lane.
    async fn settle(self: &Arc<Self>, batch: Vec<CommitRequest>, (outcomes, reservations): Committed) {
        let mut admit = BTreeSet::new();
        let mut after_admission = Vec::new();
        for ((request, outcome), reservation) in batch.into_iter().zip(outcomes).zip(reservations) {
            if let TransitionOutcome::Applied(writes) = &outcome {
                let reservation = reservation.unwrap_or_else(|| self.reserve(0));
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
        let engine = self.clone();
        tokio::spawn(async move {
            for workflow in admit {
                engine.admit(workflow).await;
            }
            for (reply, outcome) in after_admission {
                let _ = reply.send(Ok(outcome));
            }
        });
    }
}

fn fail(batch: Vec<CommitRequest>, e: &StoreError) {
    let failed = CommitFailed::from(e);
    for request in batch {
        let _ = request.reply.send(Err(failed.clone()));
    }
}
