//! The server's pool of worker processes: each request runs on a worker of its own, as many
//! at once as its lane allows (`lanes.rs`); more wait in line. A worker that
//! dies, overruns its deadline or says something unreadable is ended and judged, its request
//! fails with the cause, and a fresh worker is started in its place at once.

use super::lanes::{reserve_for, Lane, Lanes, Slot};
use super::metrics::SANDBOX;
use super::process::{Cause, Death, Ending, Worker};
use super::protocol::{self, Answer, Ready};
use super::SandboxSettings;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A worker is retired after this many answers: whatever its heap kept from them goes with it.
const RETIRE_AFTER: u64 = 10_000;

pub struct Pool {
    pub settings: SandboxSettings,
    idle: Mutex<Vec<Worker>>,
    lanes: Lanes,
}

impl Pool {
    pub fn new(settings: SandboxSettings) -> Arc<Pool> {
        let lanes = Lanes::new(settings.workers);
        Arc::new(Pool { settings, idle: Mutex::new(Vec::new()), lanes })
    }

    /// Every worker: the scripts' share and the expressions' reserve.
    pub fn size(&self) -> usize {
        let scripts = self.settings.workers.max(1);
        scripts + reserve_for(scripts)
    }

    /// Starts every worker now: a worker that cannot start is a reason not to serve. What
    /// they said when ready: whether the syscall filter is on in all, and the most
    /// descriptors one inherited from whatever started the server (`cargo run` passes its
    /// jobserver's; the filter refuses I/O on them).
    pub async fn fill(&self) -> Result<(bool, usize), String> {
        let (mut filtered, mut inherited) = (true, 0);
        for _ in 0..self.size() {
            let (worker, ready) = self.start_worker().await?;
            filtered &= ready.syscall_filter;
            inherited = inherited.max(ready.extra_descriptors);
            self.give_back(worker);
        }
        Ok((filtered, inherited))
    }

    /// Workers a request of `lane` could have at this moment without waiting in line.
    pub fn free_slots(&self, lane: Lane) -> usize {
        self.lanes.free(lane)
    }

    /// Waits in line for a worker `lane` may use (see `Lanes::slot`).
    pub async fn slot(&self, lane: Lane) -> Result<Slot, Death> {
        self.lanes.slot(lane).await
    }

    /// Sends `frame` to a free worker and reads its answer within `deadline`.
    /// Why there is none: the worker's end, judged.
    pub async fn call(
        self: &Arc<Self>,
        slot: Slot,
        frame: zeroize::Zeroizing<Vec<u8>>,
        deadline: Duration,
    ) -> Result<Answer, Death> {
        let lane = slot.lane;
        let _slot = slot;
        let mut worker = match self.take() {
            Some(worker) => worker,
            None => self.start_worker().await.map(|(worker, _)| worker).map_err(|e| failed(Cause::Start, &e))?,
        };
        let sent = Instant::now();
        let exchanged = tokio::time::timeout(deadline, worker.exchange(&frame)).await;
        SANDBOX.answered(lane, sent.elapsed());
        let death = match exchanged {
            Ok(Ok(body)) => match protocol::decode::<Answer>(&body) {
                Ok(answer) => {
                    self.keep(worker);
                    return Ok(answer);
                }
                Err(e) => worker.end(Ending::Unreadable(e)).await,
            },
            // Too large to read: the worker may still be writing it.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                worker.end(Ending::Unreadable(e.to_string())).await
            }
            Ok(Err(_)) => worker.end(Ending::Exited).await,
            Err(_) => worker.end(Ending::PastDeadline).await,
        };
        SANDBOX.restarted(death.cause.label());
        self.replace();
        Err(death)
    }

    async fn start_worker(&self) -> Result<(Worker, Ready), String> {
        Worker::start(&self.settings.program, self.settings.memory_mib).await
    }

    /// An idle worker that is still alive; one that died while idle is replaced, not used.
    fn take(self: &Arc<Self>) -> Option<Worker> {
        loop {
            let mut worker = self.idle.lock().expect("idle workers").pop()?;
            if worker.alive() {
                return Some(worker);
            }
            SANDBOX.restarted(Cause::Crash.label());
            self.replace();
        }
    }

    /// Returns a worker after an answer, or retires it after many.
    fn keep(self: &Arc<Self>, worker: Worker) {
        if worker.served < RETIRE_AFTER {
            self.give_back(worker);
            return;
        }
        SANDBOX.restarted(Cause::Retired.label());
        tokio::spawn(worker.retire());
        self.replace();
    }

    fn give_back(&self, worker: Worker) {
        let mut idle = self.idle.lock().expect("idle workers");
        if idle.len() < self.size() {
            idle.push(worker);
        } else {
            drop(idle);
            tokio::spawn(worker.retire());
        }
    }

    /// Starts a worker in the background for the one that just ended.
    fn replace(self: &Arc<Self>) {
        let pool = self.clone();
        tokio::spawn(async move {
            match pool.start_worker().await {
                Ok((worker, _)) => pool.give_back(worker),
                Err(e) => tracing::error!(error = %e, "could not start a sandbox worker; the next request tries again"),
            }
        });
    }
}

fn failed(cause: Cause, detail: &str) -> Death {
    Death { cause, detail: detail.to_owned() }
}
