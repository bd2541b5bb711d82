//! Admitting queued instances into free slots: after a transition finished an instance of a
//! limited workflow (step 5 of `commit/`, `react.rs`), and in a periodic sweep (`runner.rs`). A part of
//! its own: it holds its turns, the plans it decides with, and where it publishes and nudges.

use super::effects::{decide, Detail};
use super::machine::Event;
use super::plans::Plans;
use super::wakes::Wakes;
use super::window_wakes::WindowWakes;
use crate::events::EventBus;
use crate::store::{CatalogStore, FlowWindows, InstanceStore, Snapshot, Writes};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use uuid::Uuid;

pub(super) struct Admission {
    /// The queued instances: which workflows have some, and admitting them.
    instances: Arc<dyn InstanceStore>,
    /// The workflow whose queue is admitted (its latest version's limits).
    catalog: Arc<dyn CatalogStore>,
    plans: Arc<Plans>,
    bus: Arc<EventBus>,
    wakes: Arc<Wakes>,
    /// Admissions asked for while one runs, folded into one more.
    turns: AdmissionTurns,
    /// When a throttle window next opens for instances it holds.
    windows: Arc<dyn FlowWindows>,
    window_wakes: WindowWakes,
}

impl Admission {
    pub(super) fn new(
        instances: Arc<dyn InstanceStore>,
        catalog: Arc<dyn CatalogStore>,
        plans: Arc<Plans>,
        bus: Arc<EventBus>,
        wakes: Arc<Wakes>,
        windows: Arc<dyn FlowWindows>,
    ) -> Admission {
        Admission {
            instances,
            catalog,
            plans,
            bus,
            wakes,
            turns: AdmissionTurns::default(),
            windows,
            window_wakes: WindowWakes::default(),
        }
    }

    /// Admits queued instances of every workflow into free slots (a periodic sweep that
    /// also covers a process that died between finishing an instance and admitting).
    pub(super) async fn admit_everywhere(self: &Arc<Self>) {
        match self.instances.workflows_with_queued().await {
            Ok(workflows) => {
                for workflow in workflows {
                    self.admit(workflow).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "admission sweep failed"),
        }
    }

    /// Admits queued instances of `workflow` into its free slots; returns once an admission
    /// that began after this call has run. The runs of one workflow go one at a time, in a
    /// task of their own while calls keep coming; calls made during a run are folded into one
    /// more run after it: under load, one admission transaction (one hold of the workflow's
    /// lock) serves every instance that finished meanwhile, instead of one each, queued on
    /// that lock.
    pub(super) async fn admit(self: &Arc<Self>, workflow: Uuid) {
        let (call, leads) = self.turns.ask(workflow);
        if leads {
            let admission = self.clone();
            tokio::spawn(async move { admission.admission_runs(workflow).await });
        }
        self.turns.wait(workflow, call).await;
    }

    /// Runs admissions of `workflow` until a run ends with no call made during it.
    async fn admission_runs(self: Arc<Self>, workflow: Uuid) {
        // Should a run panic, the streak ends with it rather than leaving its callers waiting.
        let mut streak = StreakEnd { turns: &self.turns, workflow, ended: false };
        loop {
            let upto = self.turns.asked(workflow);
            match self.try_admit(workflow).await {
                Ok(Some(opens)) => self.wake_at(workflow, opens),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, %workflow, "admitting queued instances failed"),
            }
            if !self.turns.ran(workflow, upto) {
                streak.ended = true;
                return;
            }
        }
    }

    /// Books an admission round of `workflow` for when a throttle window opens at `opens`.
    fn wake_at(self: &Arc<Self>, workflow: Uuid, opens: DateTime<Utc>) {
        if !self.window_wakes.book(workflow, opens) {
            return;
        }
        let admission = self.clone();
        tokio::spawn(async move {
            let wait = (opens - Utc::now()).to_std().unwrap_or_default();
            tokio::time::sleep(wait).await;
            admission.window_wakes.due(workflow, opens);
            admission.admit(workflow).await;
        });
    }

    /// Admits what the workflow's limits have room for; returns when a throttle window next
    /// opens for instances it still holds.
    async fn try_admit(&self, workflow: Uuid) -> anyhow::Result<Option<DateTime<Utc>>> {
        let Some(record) = self.catalog.get_workflow(workflow).await? else { return Ok(None) };
        let Some(latest) = record.latest_version else { return Ok(None) };
        // Admission decides inside the store's transaction, without awaiting: load every
        // version's plan first.
        let mut plans = std::collections::HashMap::new();
        for v in 1..=latest {
            plans.insert(v, self.plans.get(workflow, v).await?);
        }
        let limits = plans[&latest].admission();
        let from_queue = Detail { from_queue: true, ..Detail::default() };
        // The store gives the admission's time, read holding the workflow's lock after its
        // slots were counted: a reading taken here, before the lock, could be earlier than
        // the recorded end of an instance whose slot it takes (`queries/admission_clock.rs`).
        let start = |s: &Snapshot, at: DateTime<Utc>| match plans.get(&s.instance.version) {
            Some(plan) => decide(plan, s, Event::Start, &from_queue, at, 0.0),
            None => Writes::default(),
        };
        let admitted = self.instances.admit_queued(workflow, limits, &start).await?;
        for (instance, writes) in &admitted {
            if let Some(first) = writes.first_seq {
                self.bus.committed(*instance, workflow, first, &writes.events);
            }
        }
        if !admitted.is_empty() {
            self.bus.metrics.flow(workflow, "limits", "admitted", admitted.len() as u64);
            self.wakes.claims.notify_one();
        }
        match limits.throttle {
            Some(window) => Ok(self.windows.next_throttle_opening(workflow, window).await?),
            None => Ok(None),
        }
    }
}

/// Admissions asked for, per workflow, and how far the runs have got (see `Admission::admit`).
#[derive(Default)]
struct AdmissionTurns {
    state: Mutex<Turns>,
    /// Told whenever a run ends.
    ran: Notify,
}

#[derive(Default)]
struct Turns {
    /// Numbers calls across workflows, so a number is never given twice.
    calls: u64,
    /// Workflows with a run going.
    running: HashMap<Uuid, Turn>,
}

struct Turn {
    /// The first call of this run's streak, the last call so far, and the last one a
    /// finished run began after.
    first: u64,
    asked: u64,
    done: u64,
}

impl AdmissionTurns {
    /// Numbers a call, and says whether it runs the admissions (none is running).
    fn ask(&self, workflow: Uuid) -> (u64, bool) {
        let mut state = self.state.lock().expect("admission turns");
        state.calls += 1;
        let call = state.calls;
        let leads = !state.running.contains_key(&workflow);
        let turn = state.running.entry(workflow).or_insert(Turn { first: call, asked: call, done: 0 });
        turn.asked = call;
        (call, leads)
    }

    fn asked(&self, workflow: Uuid) -> u64 {
        self.state.lock().expect("admission turns").running.get(&workflow).map_or(0, |t| t.asked)
    }

    /// A run that began after call `upto` ended. True if calls came since (the caller runs
    /// again); otherwise the workflow has no run going any more.
    fn ran(&self, workflow: Uuid, upto: u64) -> bool {
        let more = {
            let mut state = self.state.lock().expect("admission turns");
            match state.running.get_mut(&workflow) {
                Some(turn) if turn.asked > upto => {
                    turn.done = upto;
                    true
                }
                _ => {
                    state.running.remove(&workflow);
                    false
                }
            }
        };
        self.ran.notify_waiters();
        more
    }

    /// Waits until a run that began after call `call` ended.
    async fn wait(&self, workflow: Uuid, call: u64) {
        loop {
            // Made before the check, so a run ending between the check and the wait is seen.
            let told = self.ran.notified();
            let served = match self.state.lock().expect("admission turns").running.get(&workflow) {
                None => true,
                Some(turn) => turn.first > call || turn.done >= call,
            };
            if served {
                return;
            }
            told.await;
        }
    }
}

/// Ends a workflow's streak of admissions when its runner stops, however it stops.
struct StreakEnd<'a> {
    turns: &'a AdmissionTurns,
    workflow: Uuid,
    /// Ended by its last run (`AdmissionTurns::ran`): nothing left to do.
    ended: bool,
}

impl Drop for StreakEnd<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        self.turns.state.lock().expect("admission turns").running.remove(&self.workflow);
        self.turns.ran.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::{AdmissionTurns, StreakEnd};
    use std::time::Duration;
    use uuid::Uuid;

    /// Whether `wait` returns within a moment.
    async fn served(turns: &AdmissionTurns, workflow: Uuid, call: u64) -> bool {
        tokio::time::timeout(Duration::from_millis(50), turns.wait(workflow, call)).await.is_ok()
    }

    #[tokio::test]
    async fn calls_during_a_run_wait_for_one_more_run_after_it() {
        let (turns, workflow) = (AdmissionTurns::default(), Uuid::now_v7());
        let (first, leads) = turns.ask(workflow);
        assert!(leads);
        let upto = turns.asked(workflow);
        // Two calls while the first run goes: neither leads, both wait.
        let (second, leads_too) = turns.ask(workflow);
        let (third, _) = turns.ask(workflow);
        assert!(!leads_too);
        assert!(!served(&turns, workflow, second).await);
        // The first run began before them: it does not serve them, but another run follows.
        assert!(turns.ran(workflow, upto), "one more run");
        assert!(served(&turns, workflow, first).await);
        assert!(!served(&turns, workflow, third).await);
        let upto = turns.asked(workflow);
        assert!(!turns.ran(workflow, upto), "nothing asked since: the streak ends");
        assert!(served(&turns, workflow, second).await && served(&turns, workflow, third).await);
        // Another workflow's calls are their own.
        assert!(turns.ask(Uuid::now_v7()).1);
        assert!(turns.ask(workflow).1, "the next call leads again");
    }

    #[tokio::test]
    async fn runs_that_panic_do_not_leave_their_callers_waiting() {
        let (turns, workflow) = (AdmissionTurns::default(), Uuid::now_v7());
        turns.ask(workflow);
        let (waiting, _) = turns.ask(workflow);
        drop(StreakEnd { turns: &turns, workflow, ended: false });
        assert!(served(&turns, workflow, waiting).await);
        assert!(turns.ask(workflow).1, "the next call leads");
    }
}
