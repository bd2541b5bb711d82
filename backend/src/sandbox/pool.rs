//! The server's pool of worker processes: at most `workers` requests run at once, each on a
//! worker of its own; more wait in line (a node waiting here is not failed). A worker that
//! dies, overruns its deadline or says something unreadable is ended and judged, its request
//! fails with the cause, and a fresh worker is started in its place at once.

use super::metrics::SANDBOX;
use super::process::{Cause, Death, Worker};
use super::protocol::{self, Answer};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// A worker is retired after this many answers: whatever its heap kept from them goes with it.
const RETIRE_AFTER: u64 = 10_000;

#[derive(Debug, Clone)]
pub struct PoolSettings {
    pub program: PathBuf,
    pub workers: usize,
    pub memory_mib: u64,
}

pub struct Pool {
    settings: PoolSettings,
    idle: Mutex<Vec<Worker>>,
    slots: Semaphore,
}

/// Why a request got no answer: the worker's end, judged.
#[derive(Debug, Clone)]
pub struct Failed {
    pub death: Death,
}

impl Pool {
    pub fn new(settings: PoolSettings) -> Arc<Pool> {
        let slots = Semaphore::new(settings.workers.max(1));
        Arc::new(Pool { settings, idle: Mutex::new(Vec::new()), slots })
    }

    /// Starts every worker now: a worker that cannot start is a reason not to serve.
    pub async fn fill(&self) -> Result<bool, String> {
        let mut filtered = true;
        for _ in 0..self.settings.workers.max(1) {
            let (worker, ready) = Worker::start(&self.settings.program, self.settings.memory_mib).await?;
            if ready.extra_descriptors > 0 {
                tracing::warn!(
                    count = ready.extra_descriptors,
                    "a sandbox worker inherited descriptors beyond its pipes"
                );
            }
            filtered &= ready.syscall_filter;
            self.give_back(worker);
        }
        Ok(filtered)
    }

    /// Sends `frame` to a free worker and reads its answer within `deadline`.
    pub async fn call(self: &Arc<Self>, frame: Vec<u8>, deadline: Duration) -> Result<Answer, Failed> {
        let queued = Instant::now();
        let _slot = self.slots.acquire().await.map_err(|_| failed(Cause::Crash, "the sandbox is shut down"))?;
        SANDBOX.waited(queued.elapsed());
        let mut worker = match self.take() {
            Some(worker) => worker,
            None => Worker::start(&self.settings.program, self.settings.memory_mib)
                .await
                .map(|(worker, _)| worker)
                .map_err(|e| failed(Cause::Crash, &e))?,
        };
        let sent = Instant::now();
        let exchanged = tokio::time::timeout(deadline, worker.exchange(&frame)).await;
        SANDBOX.answered(sent.elapsed());
        let failure = match exchanged {
            Ok(Ok(body)) => match protocol::decode::<Answer>(&body) {
                Ok(answer) => {
                    self.keep(worker);
                    return Ok(answer);
                }
                Err(e) => {
                    let mut death = worker.end(false).await;
                    death.cause = Cause::Protocol;
                    death.detail = e;
                    death
                }
            },
            // Too large to read: the worker is still writing it, so it is killed at once.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                let death = worker.end(true).await;
                Death { cause: Cause::Protocol, detail: format!("{e}; {}", death.detail) }
            }
            Ok(Err(_)) => worker.end(false).await,
            Err(_) => worker.end(true).await,
        };
        SANDBOX.restarted(failure.cause.label());
        self.replace();
        Err(Failed { death: failure })
    }

    /// The pids of the idle workers (for tests that kill one).
    pub fn idle_pids(&self) -> Vec<u32> {
        self.idle.lock().expect("idle workers").iter().filter_map(Worker::pid).collect()
    }

    fn take(&self) -> Option<Worker> {
        self.idle.lock().expect("idle workers").pop()
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
        if idle.len() < self.settings.workers.max(1) {
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
            match Worker::start(&pool.settings.program, pool.settings.memory_mib).await {
                Ok((worker, _)) => pool.give_back(worker),
                Err(e) => tracing::error!(error = %e, "could not start a sandbox worker; the next request tries again"),
            }
        });
    }
}

fn failed(cause: Cause, detail: &str) -> Failed {
    Failed { death: Death { cause, detail: detail.to_owned() } }
}
