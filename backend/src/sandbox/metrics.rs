//! The sandbox's figures for `/metrics`: worker restarts by cause, how long requests wait
//! for a worker, and how long workers take to answer. Process-wide (like the commit phases),
//! registered by `events::metrics`.

use super::process::Cause;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
use std::time::Duration;

type Labels = Vec<(&'static str, String)>;

pub struct SandboxMetrics {
    restarts: Family<Labels, Counter>,
    queue_wait: Histogram,
    evaluation: Histogram,
}

pub static SANDBOX: LazyLock<SandboxMetrics> = LazyLock::new(|| SandboxMetrics {
    restarts: Family::default(),
    // 10 µs to about 20 s.
    queue_wait: Histogram::new(exponential_buckets(0.000_01, 2.0, 22)),
    evaluation: Histogram::new(exponential_buckets(0.000_01, 2.0, 22)),
});

impl SandboxMetrics {
    pub fn register(&self, registry: &mut Registry) {
        // Every cause from the start, at zero: a series that appears only once it happens
        // cannot be alerted on by its rate.
        for cause in Cause::ALL {
            drop(self.restarts.get_or_create(&vec![("cause", cause.label().to_owned())]));
        }
        registry.register(
            "trellis_sandbox_worker_restarts",
            "Sandbox workers replaced, by cause (memory, time, cpu, stack, crash, killed, protocol, retired, start)",
            self.restarts.clone(),
        );
        registry.register(
            "trellis_sandbox_queue_wait_seconds",
            "How long a request for user code waited for a free sandbox worker",
            self.queue_wait.clone(),
        );
        registry.register(
            "trellis_sandbox_evaluation_seconds",
            "How long a sandbox worker took to answer a request, from sending it to reading the answer",
            self.evaluation.clone(),
        );
    }

    pub fn restarted(&self, cause: &'static str) {
        self.restarts.get_or_create(&vec![("cause", cause.to_owned())]).inc();
    }

    pub fn waited(&self, wait: Duration) {
        self.queue_wait.observe(wait.as_secs_f64());
    }

    pub fn answered(&self, took: Duration) {
        self.evaluation.observe(took.as_secs_f64());
    }
}
