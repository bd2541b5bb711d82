//! The sandbox's figures for `/metrics`: worker restarts by cause, and per lane how long
//! requests wait for a worker, how many gave up waiting (busy), and how long workers take to
//! answer. Process-wide (like the commit phases), registered by `events::metrics`.

use super::lanes::Lane;
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
    queue_wait: Family<Labels, Histogram>,
    refused_busy: Family<Labels, Counter>,
    evaluation: Family<Labels, Histogram>,
    /// Each lane's series of the families above, taken once: no lookup per request.
    lanes: [LaneSeries; 2],
}

struct LaneSeries {
    queue_wait: Histogram,
    refused_busy: Counter,
    evaluation: Histogram,
}

/// 10 µs to about 20 s.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.000_01, 2.0, 22))
}

pub static SANDBOX: LazyLock<SandboxMetrics> = LazyLock::new(|| {
    let queue_wait = Family::<Labels, Histogram>::new_with_constructor(seconds as fn() -> Histogram);
    let refused_busy = Family::<Labels, Counter>::default();
    let evaluation = Family::<Labels, Histogram>::new_with_constructor(seconds as fn() -> Histogram);
    let series = |lane: Lane| {
        let labels = vec![("lane", lane.label().to_owned())];
        LaneSeries {
            queue_wait: queue_wait.get_or_create(&labels).clone(),
            refused_busy: refused_busy.get_or_create(&labels).clone(),
            evaluation: evaluation.get_or_create(&labels).clone(),
        }
    };
    let lanes = Lane::ALL.map(series);
    SandboxMetrics { restarts: Family::default(), queue_wait, refused_busy, evaluation, lanes }
});

impl SandboxMetrics {
    pub fn register(&self, registry: &mut Registry) {
        // Every cause (and lane, made with the families) from the start, at zero: a series
        // that appears only once it happens cannot be alerted on by its rate.
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
            "How long a request for user code waited for a free sandbox worker, by lane (expressions, scripts)",
            self.queue_wait.clone(),
        );
        registry.register(
            "trellis_sandbox_busy_refusals",
            "Requests with a deadline of their own (HTTP) refused because no sandbox worker of their lane was free in time",
            self.refused_busy.clone(),
        );
        registry.register(
            "trellis_sandbox_evaluation_seconds",
            "How long a sandbox worker took to answer a request, from sending it to reading the answer, by lane",
            self.evaluation.clone(),
        );
    }

    pub fn restarted(&self, cause: &'static str) {
        self.restarts.get_or_create(&vec![("cause", cause.to_owned())]).inc();
    }

    pub fn waited(&self, lane: Lane, wait: Duration) {
        self.series(lane).queue_wait.observe(wait.as_secs_f64());
    }

    pub fn refused_busy(&self, lane: Lane) {
        self.series(lane).refused_busy.inc();
    }

    pub fn answered(&self, lane: Lane, took: Duration) {
        self.series(lane).evaluation.observe(took.as_secs_f64());
    }

    fn series(&self, lane: Lane) -> &LaneSeries {
        &self.lanes[lane as usize]
    }
}
