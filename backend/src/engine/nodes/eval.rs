//! Where user expressions run: on tokio's blocking threads, at most one per core at a
//! time, never inline on an async worker. An evaluation is bounded (see
//! `trellis_model::expr`), but a bounded one still takes up to a few hundred milliseconds
//! of CPU; run inline, a handful at once would stall the API, `/healthz` and the engine
//! with it. One pool per process, shared by the engine's nodes and webhook deliveries, so
//! together they never occupy more than the cores.

use super::Expressions;
use std::sync::{Arc, LazyLock};
use tokio::sync::Semaphore;

pub struct Evaluator {
    expressions: Arc<Expressions>,
    permits: Arc<Semaphore>,
}

static SHARED: LazyLock<Evaluator> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Evaluator { expressions: Arc::new(Expressions::default()), permits: Arc::new(Semaphore::new(cores)) }
});

/// The process's evaluator.
pub fn shared() -> &'static Evaluator {
    &SHARED
}

impl Evaluator {
    /// The evaluator's environment, for work that only compiles (checking a mapping's
    /// syntax), which needs no slot.
    pub fn expressions(&self) -> &Expressions {
        &self.expressions
    }

    /// Runs `work` on a blocking thread once a slot is free. The slot is held until `work`
    /// returns even if the caller stops waiting (a timed-out attempt), so abandoned
    /// evaluations still count against the cores.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Expressions) -> T + Send + 'static,
    ) -> Result<T, String> {
        let permit = self.permits.clone().acquire_owned().await.map_err(|_| "the evaluator is shut down".to_owned())?;
        let expressions = self.expressions.clone();
        tokio::task::spawn_blocking(move || {
            let _slot = permit;
            work(&expressions)
        })
        .await
        .map_err(|e| format!("the evaluation stopped unexpectedly: {e}"))
    }
}
