//! One transition, top to bottom. Whatever ends or moves a node — an attempt's result, a
//! timer, a task worker's answer, an operator's cancel or signal — is a machine `Event`
//! that goes through five steps, in this file and in this order:
//!
//! 1. **submit** (`Committer::commit`, `Committer::submit`): the caller hands the event over and
//!    waits. The commit runs detached (a caller that goes away strands nothing) and is tried
//!    again on transient database trouble, through an outage for up to a lease. An attempt's
//!    result comes as a chain with the results of the attempts run ahead of its commit
//!    (`ahead.rs`): a chain is handed over, batched and written together.
//! 2. **lane** (`run_lane`): the instance's commit lane (one of `commit_lanes`, picked by
//!    instance, so one instance's events meet in one lane) takes every request waiting for it,
//!    up to `MAX_BATCH` (past it by a chain at most: chains are not split), as one batch: group
//!    commit, one transaction for all of them.
//! 3. **decide** (`Committer::decide`): for each request, on its instance as the store locked it
//!    (and as the batch's earlier steps left it), the pure `effects::decide` turns the event
//!    into `Writes`; worker slots are reserved (`reserve.rs`) so the attempts it dispatches
//!    are inserted already leased to this process.
//! 4. **write** (`Committer::write`): the store commits the batch (`transition_batch`, which
//!    calls decide per step inside its transaction). A failed batch holding several instances
//!    is written again instance by instance, so one instance's trouble holds back no other.
//! 5. **react** (`react.rs`: `Committer::react_to_batch`, `Committer::react`): in commit order, publish each
//!    transition's history entries, run the attempts leased to this process (each ends in a
//!    transition of its own, from `runner.rs`), wake the claim loop and task pollers, admit
//!    queued instances into a slot a finished instance freed (`admission.rs`), then answer.
//!
//! Starts (`start.rs`) and retries (`actions.rs`) are written by their own store calls and
//! join at step 5 (`Committer::react_and_admit`). Nothing this file calls calls back into it,
//! but for the store running step 3 inside step 4's transaction, as the invariant wants; the
//! attempts step 5 runs go to the runner through `RunLeased`, handed in, not called by name.

use super::admission::Admission;
use super::chain::Link;
use super::effects::{self, Detail};
use super::machine::Event;
use super::plan::Plan;
use super::plans::Plans;
use super::reserve::{runs_to_lease, Reservation, Workers};
use super::wakes::Wakes;
use crate::events::EventBus;
use crate::store::{
    Ahead, Fence, InstanceStore, Snapshot, Step, StoreError, TransitionOutcome, Trouble, WorkItem, Writes,
};
use chrono::{SubsecRound, Utc};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use uuid::Uuid;

mod react;

/// Tries at committing one event before its work item is left to its lease.
const COMMIT_TRIES: u32 = 5;
/// The longest wait between two tries at a commit while the database is away.
pub(super) const OUTAGE_POLL: Duration = Duration::from_millis(250);
/// Most requests committed in one batch.
const MAX_BATCH: usize = 256;

/// An event waiting to be committed, and where to say how it went.
struct CommitRequest {
    plan: Arc<Plan>,
    instance: Uuid,
    fence: Option<Fence>,
    event: Event,
    detail: Detail,
    ahead: Option<Ahead>,
    /// In [0, 1): spreads retry delays.
    jitter: f64,
    reply: oneshot::Sender<Result<TransitionOutcome, CommitFailed>>,
}

/// Why a batch holding the request was not committed (nothing of it was written).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
struct CommitFailed {
    message: String,
    trouble: Option<Trouble>,
}

/// The senders of this process's commit lanes; a chain's requests travel together, so they
/// share a batch.
struct Lanes(Vec<mpsc::UnboundedSender<Vec<CommitRequest>>>);

/// The commit path's part of the engine: its lanes, and what its steps use — the store's
/// transitions, the worker slots it reserves, the plans' admission limits, the bus it
/// publishes to, the wakes it gives, the admission it asks for. Nothing else of the engine.
pub(super) struct Committer {
    store: Arc<dyn InstanceStore>,
    workers: Arc<Workers>,
    plans: Arc<Plans>,
    bus: Arc<EventBus>,
    wakes: Arc<Wakes>,
    admission: Arc<Admission>,
    /// How long a commit keeps trying through an outage (a lease).
    lease_ms: u64,
    /// Where requests go to be committed in batches; set once the committer exists.
    lanes: OnceLock<Lanes>,
    /// Who runs the attempts a commit leased to this process; set once the runner exists.
    runner: OnceLock<Weak<dyn RunLeased>>,
}

/// Who runs the attempts a committed transition leased to this process: the runner
/// (`runner.rs`), whose results come back here as transitions of their own. Handed in
/// rather than called by name, so nothing in this file calls up into the runner.
pub(super) trait RunLeased: Send + Sync {
    /// Runs `item` (leased to this process, of an instance of `plan`) in `permit`'s slot.
    fn run_leased(self: Arc<Self>, item: WorkItem, plan: Arc<Plan>, permit: OwnedSemaphorePermit);
}

/// What a committer is made of (see `Committer`).
pub(super) struct CommitParts {
    pub store: Arc<dyn InstanceStore>,
    pub workers: Arc<Workers>,
    pub plans: Arc<Plans>,
    pub bus: Arc<EventBus>,
    pub wakes: Arc<Wakes>,
    pub admission: Arc<Admission>,
    pub lease_ms: u64,
    /// Batches committed at once.
    pub lanes: usize,
}

impl Committer {
    /// A committer with its lanes running (so: inside a tokio runtime).
    pub(super) fn new(parts: CommitParts) -> Arc<Committer> {
        let CommitParts { store, workers, plans, bus, wakes, admission, lease_ms, lanes } = parts;
        let committer = Arc::new(Committer {
            store,
            workers,
            plans,
            bus,
            wakes,
            admission,
            lease_ms,
            lanes: OnceLock::new(),
            runner: OnceLock::new(),
        });
        let _ = committer.lanes.set(Lanes::spawn(&committer, lanes));
        committer
    }

    /// Hands over who runs the attempts commits lease to this process.
    pub(super) fn run_leased_by(&self, runner: Weak<dyn RunLeased>) {
        let _ = self.runner.set(runner);
    }
}

// Step 1: submit.
impl Committer {
    /// Commits one event as one transition and reacts to what it wrote (steps 1 to 5). It
    /// runs detached and retries transient database failures: giving up would throw the
    /// attempt's result away and run it again under a new attempt number.
    pub(super) async fn commit(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: Uuid,
        fence: Option<&Fence>,
        event: Event,
        detail: Detail,
    ) -> anyhow::Result<TransitionOutcome> {
        let mut outcomes = self.commit_chain(plan, instance, fence, vec![Link::new(event, detail)]).await?;
        Ok(outcomes.pop().unwrap_or(TransitionOutcome::NotFound))
    }

    /// Commits a chain of events of one instance in one batch (see `Link`), as `commit` does one.
    pub(super) async fn commit_chain(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: Uuid,
        fence: Option<&Fence>,
        links: Vec<Link>,
    ) -> anyhow::Result<Vec<TransitionOutcome>> {
        let (committer, plan, fence) = (self.clone(), plan.clone(), fence.cloned());
        tokio::spawn(async move { committer.submit(plan, instance, fence, links).await }).await?
    }

    /// Hands the chain to its lane until it is committed, it fails for good, or the engine stops.
    async fn submit(
        &self,
        plan: Arc<Plan>,
        instance: Uuid,
        fence: Option<Fence>,
        links: Vec<Link>,
    ) -> anyhow::Result<Vec<TransitionOutcome>> {
        // While the database is away the commit keeps trying, every `OUTAGE_POLL` at most,
        // until its lease would have ended (another process may take the work over then):
        // the result lands as soon as the database is back, not a lease later.
        let outage_deadline = Instant::now() + Duration::from_millis(self.lease_ms);
        let mut delay = Duration::from_millis(50);
        for attempt in 1.. {
            let mut answers = Vec::with_capacity(links.len());
            let group = links
                .iter()
                .enumerate()
                .map(|(k, link)| {
                    let (reply, answer) = oneshot::channel();
                    answers.push(answer);
                    CommitRequest {
                        plan: plan.clone(),
                        instance,
                        fence: if k == 0 { fence.clone() } else { None },
                        event: link.event.clone(),
                        detail: link.detail.clone(),
                        ahead: link.ahead.clone(),
                        jitter: rand::random::<f64>(),
                        reply,
                    }
                })
                .collect();
            if self.lanes.get().is_none_or(|lanes| !lanes.submit(group)) {
                anyhow::bail!("the engine is shutting down");
            }
            match gather(answers).await {
                Ok(Ok(outcomes)) => return Ok(outcomes),
                Ok(Err(e))
                    if attempt < COMMIT_TRIES
                        || (e.trouble == Some(Trouble::Unavailable) && Instant::now() < outage_deadline) =>
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
    }
}

/// The answers to a chain's requests, in order; the first failure if one failed (a chain is
/// written in one batch: all of it or none).
async fn gather(
    answers: Vec<oneshot::Receiver<Result<TransitionOutcome, CommitFailed>>>,
) -> Result<Result<Vec<TransitionOutcome>, CommitFailed>, oneshot::error::RecvError> {
    let mut outcomes = Vec::with_capacity(answers.len());
    for answer in answers {
        match answer.await? {
            Ok(outcome) => outcomes.push(outcome),
            Err(e) => return Ok(Err(e)),
        }
    }
    Ok(Ok(outcomes))
}

// Step 2: lane.
impl Lanes {
    /// `count` lanes, each committing on its own task for as long as `committer` lives.
    fn spawn(committer: &Arc<Committer>, count: usize) -> Lanes {
        let senders = (0..count.max(1))
            .map(|_| {
                let (sender, receiver) = mpsc::unbounded_channel();
                tokio::spawn(run_lane(Arc::downgrade(committer), receiver));
                sender
            })
            .collect();
        Lanes(senders)
    }

    /// Hands a chain of one instance's requests to that instance's lane. False if the lane
    /// is gone (shutting down).
    fn submit(&self, group: Vec<CommitRequest>) -> bool {
        let Some(first) = group.first() else { return true };
        let lane = (first.instance.as_u128() % self.0.len() as u128) as usize;
        self.0[lane].send(group).is_ok()
    }
}

/// A lane: takes what is waiting (whatever arrived while its previous batch was committing)
/// as the next batch. An idle lane commits a lone request at once, so batching adds no
/// latency; under load the batches grow by themselves.
async fn run_lane(committer: Weak<Committer>, mut requests: mpsc::UnboundedReceiver<Vec<CommitRequest>>) {
    while let Some(mut batch) = requests.recv().await {
        while batch.len() < MAX_BATCH {
            match requests.try_recv() {
                Ok(group) => batch.extend(group),
                Err(_) => break,
            }
        }
        let Some(committer) = committer.upgrade() else { return };
        committer.commit_batch(batch).await;
    }
}

impl Committer {
    /// Writes a batch (deciding each step inside) and reacts to it; if it fails and holds
    /// several instances, does so for each instance's requests on their own.
    async fn commit_batch(self: &Arc<Self>, batch: Vec<CommitRequest>) {
        let instances: BTreeSet<Uuid> = batch.iter().map(|r| r.instance).collect();
        match self.write(&batch).await {
            Ok(written) => self.react_to_batch(batch, written).await,
            Err(e) if instances.len() > 1 => {
                tracing::warn!(error = %e, steps = batch.len(), "a batch failed; committing its instances one by one");
                for group in by_instance(batch, &instances) {
                    match self.write(&group).await {
                        Ok(written) => self.react_to_batch(group, written).await,
                        Err(e) => fail(group, &e),
                    }
                }
            }
            Err(e) => fail(batch, &e),
        }
    }
}

/// The batch's requests, one group per instance, in `instances`' order.
fn by_instance(batch: Vec<CommitRequest>, instances: &BTreeSet<Uuid>) -> Vec<Vec<CommitRequest>> {
    let mut groups: Vec<Vec<CommitRequest>> = instances.iter().map(|_| Vec::new()).collect();
    for request in batch {
        let at = instances.iter().position(|id| *id == request.instance).unwrap_or_default();
        groups[at].push(request);
    }
    groups
}

/// Answers every request of a batch that was not written.
fn fail(batch: Vec<CommitRequest>, e: &StoreError) {
    let failed = CommitFailed { message: e.to_string(), trouble: e.trouble() };
    for request in batch {
        let _ = request.reply.send(Err(failed.clone()));
    }
}

// Step 3: decide.
impl Committer {
    /// The rows one request writes, given its instance as the store locked it, with the worker
    /// slots for the attempts they dispatch (leased to this process in the rows).
    fn decide(&self, request: &CommitRequest, snapshot: &Snapshot) -> (Writes, Reservation) {
        let (plan, event, detail) = (&request.plan, request.event.clone(), &request.detail);
        // Microseconds, as Postgres keeps them: a remembered snapshot then holds what reading
        // the instance back would give.
        let now = Utc::now().trunc_subsecs(6);
        let mut writes = effects::decide(plan, snapshot, event, detail, now, request.jitter);
        let reservation = self.workers.reserve(runs_to_lease(&writes));
        reservation.lease_runs(&mut writes, &self.workers.owner);
        (writes, reservation)
    }
}

/// What a written batch gives step 5 (`react.rs`): each request's outcome and its reserved slots.
type Written = (Vec<TransitionOutcome>, Vec<Option<Reservation>>);

// Step 4: write.
impl Committer {
    /// Commits the batch in one transaction, deciding each step inside it.
    async fn write(&self, batch: &[CommitRequest]) -> Result<Written, StoreError> {
        let steps: Vec<Step<'_>> = batch
            .iter()
            .map(|r| Step { instance: r.instance, fence: r.fence.as_ref(), ahead: r.ahead.as_ref() })
            .collect();
        let reservations: Vec<Mutex<Option<Reservation>>> = batch.iter().map(|_| Mutex::new(None)).collect();
        let decide_step = |i: usize, snapshot: &Snapshot| {
            // A step decided again (its batch refused on remembered snapshots, or a deadlock
            // victim run again) gives its first decision's slots back before taking any.
            drop(reservations[i].lock().expect("reservation slot").take());
            let (writes, reservation) = self.decide(&batch[i], snapshot);
            *reservations[i].lock().expect("reservation slot") = Some(reservation);
            writes
        };
        let outcomes = self.store.transition_batch(&steps, &decide_step).await?;
        let reservations = reservations.into_iter().map(|slot| slot.into_inner().expect("reservation slot")).collect();
        Ok((outcomes, reservations))
    }
}
