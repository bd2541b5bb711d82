//! `/metrics`: this process's counters and histograms, fed from the history entries it
//! commits, plus gauges read at scrape time (queue depth, timers, SSE clients, pool use).

use crate::store::phases::{Phase, PHASES};
use crate::store::{EngineGauges, POOL_WAITS};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use trellis_model::trace::Span;

type Labels = Vec<(&'static str, String)>;

pub struct Metrics {
    registry: Registry,
    started: Counter,
    finished: Family<Labels, Counter>,
    node_duration: Family<Labels, Histogram>,
    queue_depth: Family<Labels, Gauge>,
    pending_timers: Gauge,
    sse_clients: Gauge,
    pool: Family<Labels, Gauge>,
    pool_max: Gauge,
    pool_acquires: Gauge,
    pool_wait: Gauge<f64, AtomicU64>,
    pool_timeouts: Gauge,
    commit_phases: Family<Labels, Gauge<f64, AtomicU64>>,
    commit_batches: Gauge,
    commit_transitions: Gauge,
    engine_statements: Gauge,
    engine_transactions: Gauge,
    remembered_writes: Family<Labels, Gauge>,
    start_batches: Gauge,
    batched_starts: Gauge,
    ran_ahead: Family<Labels, Gauge>,
    snapshots: Gauge,
    snapshot_bytes: Gauge,
    /// Spans the OpenTelemetry exporter had to drop (its queue was full or the collector
    /// refused them).
    pub spans_dropped: Counter<u64, AtomicU64>,
    /// Event-stream reads served from the stored history rather than the hub: replays,
    /// resyncs, and streams that fell behind the hub's recent entries.
    pub sse_history_reads: Counter<u64, AtomicU64>,
    /// Starts and admissions under the workflows' limits (`flow_control`).
    flow: Family<Labels, Counter>,
    /// Node attempts under shared limits (`/limits`).
    shared_limits: Family<Labels, Counter>,
    /// Messages broker triggers took, by outcome.
    broker_messages: Family<Labels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let node_duration = Family::<Labels, Histogram>::new_with_constructor(|| {
            // 1 ms to about 9 minutes.
            Histogram::new(exponential_buckets(0.001, 2.0, 20))
        });
        let mut metrics = Metrics {
            registry: Registry::default(),
            started: Counter::default(),
            finished: Family::default(),
            node_duration,
            queue_depth: Family::default(),
            pending_timers: Gauge::default(),
            sse_clients: Gauge::default(),
            pool: Family::default(),
            pool_max: Gauge::default(),
            pool_acquires: Gauge::default(),
            pool_wait: Gauge::default(),
            pool_timeouts: Gauge::default(),
            commit_phases: Family::default(),
            commit_batches: Gauge::default(),
            commit_transitions: Gauge::default(),
            engine_statements: Gauge::default(),
            engine_transactions: Gauge::default(),
            remembered_writes: Family::default(),
            start_batches: Gauge::default(),
            batched_starts: Gauge::default(),
            ran_ahead: Family::default(),
            snapshots: Gauge::default(),
            snapshot_bytes: Gauge::default(),
            spans_dropped: Counter::default(),
            sse_history_reads: Counter::default(),
            flow: Family::default(),
            shared_limits: Family::default(),
            broker_messages: Family::default(),
        };
        metrics.register();
        metrics
    }
}

impl Metrics {
    fn register(&mut self) {
        let r = &mut self.registry;
        r.register("trellis_instances_started", "Instances created by this process", self.started.clone());
        r.register("trellis_instances_finished", "Instances that finished, by status", self.finished.clone());
        r.register(
            "trellis_node_duration_seconds",
            "Node attempts from dispatch to end, by node type and outcome",
            self.node_duration.clone(),
        );
        r.register(
            "trellis_queue_depth",
            "Instances waiting for a concurrency slot, by workflow",
            self.queue_depth.clone(),
        );
        r.register(
            "trellis_timers_pending",
            "Delays, retry backoffs and timeouts not yet fired",
            self.pending_timers.clone(),
        );
        r.register("trellis_sse_clients", "Server-sent event streams open on this process", self.sse_clients.clone());
        r.register("trellis_db_pool_connections", "Database connections of this process, by state", self.pool.clone());
        r.register("trellis_db_pool_max_connections", "The database pool's size limit", self.pool_max.clone());
        r.register(
            "trellis_db_pool_acquires",
            "Connections (with their BEGIN) this process got from its pool (Postgres; only grows)",
            self.pool_acquires.clone(),
        );
        r.register(
            "trellis_db_pool_wait_seconds",
            "Seconds this process waited for pooled connections since it started (Postgres; only grows)",
            self.pool_wait.clone(),
        );
        r.register(
            "trellis_db_pool_timeouts",
            "Waits for a pooled connection that gave up (answered 503; Postgres; only grows)",
            self.pool_timeouts.clone(),
        );
        r.register(
            "trellis_commit_phase_seconds",
            "Seconds this process spent committing transitions since it started, by phase (only grows)",
            self.commit_phases.clone(),
        );
        r.register(
            "trellis_commit_batches",
            "Batches of transitions this process committed",
            self.commit_batches.clone(),
        );
        r.register(
            "trellis_commit_transitions",
            "Transitions this process committed (in its batches)",
            self.commit_transitions.clone(),
        );
        r.register(
            "trellis_engine_statements",
            "Statements (round trips, BEGIN and COMMIT included) the engine sent: transitions, admissions, starts, claims and instance reads before attempts",
            self.engine_statements.clone(),
        );
        r.register(
            "trellis_engine_transactions",
            "Transactions the engine committed (a claim or a read alone is one)",
            self.engine_transactions.clone(),
        );
        r.register(
            "trellis_engine_remembered_batches",
            "Batches written from instances as this process last wrote them, without locking and reading them (outcome written), or tried so and refused because another writer got there first (outcome refused; then locked and written)",
            self.remembered_writes.clone(),
        );
        r.register(
            "trellis_engine_start_batches",
            "Transactions that wrote the starts waiting at one moment, however many (starts without an Idempotency-Key or a business key)",
            self.start_batches.clone(),
        );
        r.register(
            "trellis_engine_batched_starts",
            "Starts written in those transactions (divided by trellis_engine_start_batches: starts per transaction)",
            self.batched_starts.clone(),
        );
        r.register(
            "trellis_engine_ran_ahead",
            "Attempts of nodes that only compute (no-op, transform, branch, script) run before the step dispatching them was written, and committed with it (outcome kept), or whose result was dropped because the step decided otherwise (outcome dropped; the attempt then ran as usual)",
            self.ran_ahead.clone(),
        );
        r.register(
            "trellis_snapshots",
            "Instances this process remembers as it last wrote them, for their next transitions",
            self.snapshots.clone(),
        );
        r.register(
            "trellis_snapshot_bytes",
            "The memory those remembered instances take (estimated: values, text and bookkeeping)",
            self.snapshot_bytes.clone(),
        );
        r.register(
            "trellis_flow_control",
            "Starts under a workflow's limits, by workflow, limit and outcome: refused (rate_limit, or a full \
             limit under on_limit: reject), queued (waited for a slot or a throttle window) and admitted from \
             the queue",
            self.flow.clone(),
        );
        r.register(
            "trellis_shared_limit",
            "Node attempts under shared limits, by limit and outcome: admitted (began), waited (deferred without \
             counting an attempt), paused (a call was answered 429 or 503 with Retry-After), missing (the limit \
             was deleted: ran without it)",
            self.shared_limits.clone(),
        );
        r.register(
            "trellis_broker_messages",
            "Messages broker triggers (nats, amqp, mqtt) took, by trigger and outcome: started, duplicate, \
             rejected, rate_limited, error (left unacknowledged for the broker to deliver again)",
            self.broker_messages.clone(),
        );
        crate::sandbox::METRICS.register(r);
        r.register("trellis_otel_spans_dropped", "Spans not exported to OpenTelemetry", self.spans_dropped.clone());
        r.register(
            "trellis_sse_history_reads",
            "Event-stream reads served from the stored history instead of the in-memory recent entries",
            self.sse_history_reads.clone(),
        );
    }

    /// `n` starts of `workflow` met `limit` (`rate_limit`, `max_concurrent_instances`,
    /// `max_per_key`, `limits` for a queue wait or an admission) with `outcome` (`refused`,
    /// `queued`, `admitted`).
    pub fn flow(&self, workflow: uuid::Uuid, limit: &str, outcome: &str, n: u64) {
        let labels =
            vec![("workflow", workflow.to_string()), ("limit", limit.to_owned()), ("outcome", outcome.to_owned())];
        self.flow.get_or_create(&labels).inc_by(n);
    }

    /// A node attempt under shared limit `limit` met `outcome` (`admitted`, `waited`, `paused`, `missing`).
    pub fn shared_limit(&self, limit: &str, outcome: &str) {
        let labels = vec![("limit", limit.to_owned()), ("outcome", outcome.to_owned())];
        self.shared_limits.get_or_create(&labels).inc();
    }

    /// `n` messages of broker trigger `trigger` met `outcome` (a delivery outcome).
    pub fn broker_messages(&self, trigger: uuid::Uuid, outcome: &str, n: u64) {
        let labels = vec![("trigger", trigger.to_string()), ("outcome", outcome.to_owned())];
        self.broker_messages.get_or_create(&labels).inc_by(n);
    }

    pub fn instance_started(&self) {
        self.started.inc();
    }

    pub fn instance_finished(&self, status: &str) {
        self.finished.get_or_create(&vec![("status", status.to_owned())]).inc();
    }

    /// A node attempt's span closed.
    pub fn attempt_ended(&self, span: &Span) {
        let Some(ms) = span.duration_ms() else { return };
        let node_type = span.attributes.get("trellis.node_type").and_then(|v| v.as_str()).unwrap_or("unknown");
        let labels = vec![("type", node_type.to_owned()), ("status", span.status.as_str().to_owned())];
        self.node_duration.get_or_create(&labels).observe(ms.max(0) as f64 / 1e3);
    }

    /// The page, with gauges as of now.
    pub fn render(&self, gauges: &EngineGauges, sse_clients: i64) -> String {
        self.queue_depth.clear();
        for (workflow, depth) in &gauges.queued_by_workflow {
            self.queue_depth.get_or_create(&vec![("workflow", workflow.to_string())]).set(*depth);
        }
        self.pending_timers.set(gauges.pending_timers);
        self.sse_clients.set(sse_clients);
        let in_use = gauges.pool.size.saturating_sub(gauges.pool.idle);
        self.pool.get_or_create(&vec![("state", "idle".to_owned())]).set(i64::from(gauges.pool.idle));
        self.pool.get_or_create(&vec![("state", "in_use".to_owned())]).set(i64::from(in_use));
        self.pool_max.set(i64::from(gauges.pool.max));
        let (acquires, waited, timeouts) = POOL_WAITS.totals();
        self.pool_acquires.set(acquires as i64);
        self.pool_wait.set(waited);
        self.pool_timeouts.set(timeouts as i64);
        for phase in Phase::ALL {
            self.commit_phases.get_or_create(&vec![("phase", phase.name().to_owned())]).set(PHASES.seconds(phase));
        }
        let (batches, transitions) = PHASES.counts();
        self.commit_batches.set(batches as i64);
        self.commit_transitions.set(transitions as i64);
        let (statements, transactions) = PHASES.sent();
        self.engine_statements.set(statements as i64);
        self.engine_transactions.set(transactions as i64);
        let (written, refused) = PHASES.remembered_counts();
        for (outcome, n) in [("written", written), ("refused", refused)] {
            self.remembered_writes.get_or_create(&vec![("outcome", outcome.to_owned())]).set(n as i64);
        }
        let (start_batches, batched_starts) = PHASES.start_batch_counts();
        self.start_batches.set(start_batches as i64);
        self.batched_starts.set(batched_starts as i64);
        let (kept, dropped) = PHASES.ran_ahead_counts();
        for (outcome, n) in [("kept", kept), ("dropped", dropped)] {
            self.ran_ahead.get_or_create(&vec![("outcome", outcome.to_owned())]).set(n as i64);
        }
        self.snapshots.set(gauges.snapshots as i64);
        self.snapshot_bytes.set(gauges.snapshot_bytes as i64);
        let mut page = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut page, &self.registry);
        page
    }
}
