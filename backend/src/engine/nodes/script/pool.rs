//! The threads scripts run on: a few dedicated OS threads (one per core, at least two), never
//! tokio's workers or its blocking pool. A script may spin for its whole time limit; on an
//! async worker that would stall the scheduler and the API, and in the blocking pool it would
//! hold threads the expression evaluator and the database driver count on. A semaphore as
//! wide as the pool keeps waiting scripts queued as futures, not as threads, and at least two
//! threads mean one runaway script never holds up every other one. The threads' stacks are
//! sized well above the interpreter's own stack limit, so deep recursion is the script's
//! error and never the thread's overflow.

use super::sandbox;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, LazyLock, Mutex};
use tokio::sync::{oneshot, Semaphore};

/// Each thread's stack: the interpreter's limit plus ample room for the native frames
/// (parsing, JSON, garbage collection) that run below it.
const THREAD_STACK: usize = 4 * sandbox::STACK_BYTES;

type Job = Box<dyn FnOnce() + Send>;

pub struct Pool {
    jobs: mpsc::Sender<Job>,
    permits: Arc<Semaphore>,
}

static SHARED: LazyLock<Pool> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Pool::new(cores.max(2))
});

/// The process's script pool (started on first use).
pub fn shared() -> &'static Pool {
    &SHARED
}

impl Pool {
    fn new(threads: usize) -> Pool {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let started = (0..threads).filter(|i| spawn(*i, queue.clone())).count();
        if started < threads {
            tracing::error!(started, wanted = threads, "could not start every script thread");
        }
        Pool { jobs, permits: Arc::new(Semaphore::new(started)) }
    }

    /// Runs `work` (a script, or compiling some) on a pool thread once one is free. The slot
    /// is held until `work` ends even if the caller stops waiting, so an abandoned script
    /// still counts.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let permit =
            self.permits.clone().acquire_owned().await.map_err(|_| "the script pool is shut down".to_owned())?;
        let (done, ran) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _slot = permit;
            let _ = done.send(catch_unwind(AssertUnwindSafe(work)));
        });
        self.jobs.send(job).map_err(|_| "the script pool is shut down".to_owned())?;
        match ran.await {
            Ok(Ok(ran)) => Ok(ran),
            Ok(Err(_)) | Err(_) => Err("the script engine stopped unexpectedly".to_owned()),
        }
    }
}

/// Starts pool thread `i`; false when the system would not give one.
fn spawn(i: usize, queue: Arc<Mutex<mpsc::Receiver<Job>>>) -> bool {
    let work = move || loop {
        // The lock is held only to take a job, never while running one.
        let job = match queue.lock().map(|q| q.recv()) {
            Ok(Ok(job)) => job,
            _ => return,
        };
        job();
    };
    let started = std::thread::Builder::new().name(format!("trellis-script-{i}")).stack_size(THREAD_STACK).spawn(work);
    if let Err(e) = &started {
        tracing::error!(error = %e, "could not start a script thread");
    }
    started.is_ok()
}
