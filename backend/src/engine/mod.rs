//! The durable DAG engine, in floors; a file imports only from its own floor or below.
//!
//! 0. **The pure core**: `machine` (the state machine), `effects` (a step into rows), `trace`,
//!    `bad_end`, `plan`, `outputs`, `json`, `input_schema`, `validate`, `callee`,
//!    `start_keys`, `lineage`, and the words the floors above share: `chain` (events
//!    committed together), `context` (what expressions see), `start_request`, `error`. No I/O;
//!    it calls nothing in the shell.
//! 1. **Node execution**: `nodes/` (one file per node type, the `Runtime`) and `results`.
//! 2. **Parts with state of their own**: `reserve` (`Workers`: worker and timer slots, lease
//!    name, draining), `plans` (the plan cache), `wakes`, `start_lane`, `admission`.
//! 3. **Commit** (`commit/`, `Committer`): lanes, batches, chains; one transition reads top to
//!    bottom there. What it leases to this process it hands to the runner through `RunLeased`.
//! 4. **Commands** (`commands`, `Commands`): `start`, `control`, `actions`, `tasks`.
//! 5. **Hooks**: `alert_items` (`Alerts`), `failure_handler` (`FailureHandlers`).
//! 6. **Run** (`run`, `Runner`), in the order it calls: the claim loop (`runner`), `wheel`,
//!    `handle` (one claimed item), `limited` (shared limits), `ahead`, `attempt`, `map/`, `children`.
//! 7. **This file**: `Engine` builds the parts from the floor up, each handed only the parts and
//!    store handles it calls, and answers the API for them.
//!
//! A start: `Engine::start` → `Commands::start` (`start.rs`: prepared, written through the
//! start lane or the store) → `Committer::react_and_admit` (`commit/react.rs`: published, its
//! first attempts handed to `RunLeased`). A node outcome: `handle.rs` runs the attempt
//! (`attempt.rs`) and those it dispatches that only compute (`ahead.rs`), then
//! `Committer::commit_chain` (`commit/`: submit → lane → decide → write → react), whose react
//! hands the next attempts to `RunLeased` — the one way back up, handed in, not imported.

mod actions;
mod admission;
mod ahead;
mod alert_items;
pub mod approvals;
mod attempt;
mod bad_end;
pub mod callee;
mod chain;
mod children;
mod commands;
mod commit;
mod context;
mod control;
mod debounce;
pub mod effects;
mod error;
mod failure_handler;
mod group_commit;
mod handle;
pub mod input_schema;
pub mod json;
mod limit_lane;
mod limited;
mod lineage;
pub mod machine;
mod map;
pub mod nodes;
pub mod outputs;
pub mod plan;
mod plans;
mod reserve;
mod results;
mod run;
mod runner;
mod start;
mod start_keys;
mod start_lane;
mod start_request;
mod tasks;
pub mod trace;
pub mod validate;
mod wakes;
mod wheel;
mod window_wakes;

pub use context::context;
pub use debounce::DebounceLoop;
pub use error::EngineError;
pub use lineage::Lineage;
pub use start_request::{ParentLink, StartRequest, Started};
pub use tasks::TaskLease;

use crate::events::EventBus;
use crate::http_client::OutboundPolicy;
use crate::sandbox::Sandbox;
use crate::secrets::Vault;
use crate::store::{CatalogStore, DynStore, InstanceStore, WorkQueue};
use chrono::{DateTime, Utc};
use nodes::http::HttpRunner;
use nodes::Runtime;
use plan::Plan;
use std::sync::Arc;
use std::time::Duration;
use trellis_model::InstanceStatus;
use uuid::Uuid;

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Node attempts run at once by this process.
    pub workers: usize,
    /// How long a claim holds work before another process may take it over.
    pub lease_ms: u64,
    pub http_allow: OutboundPolicy,
    /// Largest instance input, serialized.
    pub max_input_bytes: usize,
    /// Largest node output and instance total of node outputs, serialized.
    pub output_caps: outputs::OutputCaps,
    /// Batches committed at once (see `commit/`); outcomes of one instance share one.
    pub commit_lanes: usize,
    /// The most items a `map` node runs over.
    pub map_max_items: usize,
    /// `TRELLIS_PUBLIC_URL`: the base of the instance links a failure handler gets.
    pub public_url: Option<String>,
    /// While held, nothing is claimed or run (`crate::cluster::Hold`).
    pub hold: crate::cluster::Hold,
}

/// The engine: the parts, wired. Each part holds what it uses and is handed the parts below it
/// (see the module doc); the engine holds the top ones and answers for them.
pub struct Engine {
    /// The store this engine (and its server) writes through.
    store: DynStore,
    config: EngineConfig,
    /// Where committed history entries go: live views, metrics, OpenTelemetry.
    pub bus: Arc<EventBus>,
    /// Starts, acts on instances, serves task workers (`commands.rs`).
    commands: Arc<commands::Commands>,
    /// Claims and runs work (`run.rs`).
    runner: Arc<run::Runner>,
}

impl Engine {
    /// A new engine with its commit lanes running (so: inside a tokio runtime).
    pub fn new(store: DynStore, config: EngineConfig, sandbox: Arc<Sandbox>, secrets: Arc<Vault>) -> Arc<Engine> {
        let runtime = Runtime { http: HttpRunner::new(config.http_allow.clone()), sandbox, secrets };
        // Each part is handed only the store's traits it calls, upcast from the whole store
        // (here, or where a part takes one trait alone).
        let instances: Arc<dyn InstanceStore> = store.clone();
        let catalog: Arc<dyn CatalogStore> = store.clone();
        let work: Arc<dyn WorkQueue> = store.clone();
        // From the floor up: the parts with state of their own, the commit path, the
        // commands, the hooks, the runner.
        let plans = Arc::new(plans::Plans::new(catalog.clone(), instances.clone()));
        let wakes = Arc::<wakes::Wakes>::default();
        let bus = Arc::new(EventBus::default());
        let owner = format!("{}-{}", hostname(), Uuid::now_v7());
        let workers = Arc::new(reserve::Workers::new(owner, config.workers, config.lease_ms, wheel::WHEEL_SLOTS));
        let admission = Arc::new(admission::Admission::new(
            instances.clone(),
            catalog.clone(),
            plans.clone(),
            bus.clone(),
            wakes.clone(),
            store.clone(),
        ));
        let committer = commit::Committer::new(commit::CommitParts {
            store: instances.clone(),
            workers: workers.clone(),
            plans: plans.clone(),
            bus: bus.clone(),
            wakes: wakes.clone(),
            admission: admission.clone(),
            lease_ms: config.lease_ms,
            lanes: config.commit_lanes,
        });
        let commands = Arc::new(commands::Commands {
            catalog: catalog.clone(),
            instances: instances.clone(),
            work: work.clone(),
            plans: plans.clone(),
            workers: workers.clone(),
            committer: committer.clone(),
            start_lane: start_lane::StartLane::new(instances.clone(), config.commit_lanes),
            bus: bus.clone(),
            wakes: wakes.clone(),
            sandbox: runtime.sandbox.clone(),
            secrets: runtime.secrets.clone(),
            debounces: store.clone(),
            max_input_bytes: config.max_input_bytes,
            output_caps: config.output_caps,
            approvals: store.clone(),
        });
        let public_url = config.public_url.clone();
        let alerts = alert_items::Alerts::new(store.clone(), instances.clone(), public_url.clone());
        let failure_handlers = failure_handler::FailureHandlers::new(
            instances.clone(),
            catalog.clone(),
            commands.clone(),
            bus.clone(),
            public_url,
        );
        let runner = Arc::new(run::Runner {
            work,
            instances,
            map_items: store.clone(),
            limits: store.clone(),
            limit_lane: limit_lane::LimitLane::new(store.clone(), config.commit_lanes),
            approvals: store.clone(),
            catalog,
            runtime,
            plans,
            wakes,
            workers,
            committer: committer.clone(),
            commands: commands.clone(),
            admission,
            alerts,
            failure_handlers,
            bus: bus.clone(),
            too_slow: run::TooSlow::default(),
            output_caps: config.output_caps,
            map_max_items: config.map_max_items,
            lease_ms: config.lease_ms,
            hold: config.hold.clone(),
        });
        let leased_to: std::sync::Weak<dyn commit::RunLeased> = Arc::downgrade(&runner) as _;
        committer.run_leased_by(leased_to);
        Arc::new(Engine { store, config, bus, commands, runner })
    }

    /// Runs the claim loop until `shutdown` turns true, then drains: waits up to `grace`
    /// for running attempts and gives up every lease still held so others take over at once.
    /// Due `debounce` bursts are started beside it, until the same `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: tokio::sync::watch::Receiver<bool>, grace: Duration) {
        let lease = Duration::from_millis(self.config.lease_ms.max(1_000));
        let bursts = DebounceLoop::new(self.store.clone(), self.clone(), lease);
        let bursts = tokio::spawn(bursts.run(shutdown.clone()));
        let sweep = approvals::ApprovalSweep {
            approvals: self.store.clone(),
            commands: self.commands.clone(),
            hold: self.config.hold.clone(),
        };
        let sweep = tokio::spawn(sweep.run(shutdown.clone()));
        self.runner.clone().run(shutdown, grace).await;
        if let Err(e) = bursts.await {
            tracing::warn!(error = %e, "the debounce loop ended abnormally");
        }
        if let Err(e) = sweep.await {
            tracing::warn!(error = %e, "the approval sweep ended abnormally");
        }
    }

    /// The settings the engine runs with (the outbound policy, the public URL).
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// This process's name in leases and in the cluster's process list.
    pub fn process_id(&self) -> &str {
        &self.runner.workers.owner
    }

    /// Whether this process may claim and run work now (`crate::cluster::Hold`).
    pub fn hold(&self) -> &crate::cluster::Hold {
        &self.config.hold
    }

    /// The store this engine (and its server) writes through.
    pub fn store(&self) -> &DynStore {
        &self.store
    }

    /// Where user code runs: node expressions and scripts, and also validation, previews,
    /// concurrency keys and webhook mappings.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.runner.runtime.sandbox
    }

    /// The secrets node attempts use (sealed with this process's master key).
    pub fn secrets(&self) -> &Arc<Vault> {
        &self.runner.runtime.secrets
    }

    /// The caps on stored outputs (a script preview is held to the per-node one).
    pub fn output_caps(&self) -> outputs::OutputCaps {
        self.config.output_caps
    }

    /// The execution plan of a published version (`plans.rs`).
    pub(crate) async fn plan(&self, workflow: Uuid, version: i64) -> anyhow::Result<Arc<Plan>> {
        self.runner.plans.get(workflow, version).await
    }
}

/// The commands, answered by the `Commands` part (`start.rs`, `control.rs`, `actions.rs`,
/// `tasks.rs`).
impl Engine {
    /// Starts an instance. With an `idempotency_key`, repeating the same request returns the
    /// first answer and creates nothing; the same key with a different request is refused.
    pub async fn start(&self, request: StartRequest) -> Result<Started, EngineError> {
        self.commands.start(request).await
    }

    /// Checks `input` against the latest published version's `input_schema`, as a start would.
    pub async fn check_input(&self, workflow: Uuid, input: &serde_json::Value) -> Result<(), EngineError> {
        self.commands.check_input(workflow, input).await
    }

    pub async fn cancel(&self, id: Uuid) -> Result<(), EngineError> {
        self.commands.cancel(id).await
    }

    /// Records `person`'s decision on approval `id` (see `approvals/decide.rs`).
    pub async fn decide_approval(
        &self,
        id: Uuid,
        person: &crate::store::Person,
        request: trellis_model::api::DecisionRequest,
    ) -> Result<approvals::Decision, EngineError> {
        self.commands.decide_approval(id, person, request).await
    }

    /// Completes a `wait_signal` node that is waiting, with `payload` as its output.
    pub async fn signal(&self, id: Uuid, node: &str, payload: serde_json::Value) -> Result<(), EngineError> {
        self.commands.signal(id, node, payload).await
    }

    pub async fn pause(&self, id: Uuid) -> Result<(), EngineError> {
        self.commands.pause(id).await
    }

    pub async fn resume(&self, id: Uuid) -> Result<(), EngineError> {
        self.commands.resume(id).await
    }

    /// Runs a finished instance again from `from` (see `actions.rs`).
    pub async fn retry(&self, id: Uuid, from: &str, latest_version: bool) -> Result<InstanceStatus, EngineError> {
        self.commands.retry(id, from, latest_version).await
    }

    /// Long-polls `queue` for a task, for up to `wait`.
    pub async fn poll_task(&self, queue: &str, wait: Duration) -> Result<Option<TaskLease>, EngineError> {
        if self.hold().is_held() {
            // A held database hands no work out, to workers of its own either.
            tokio::time::sleep(wait).await;
            return Ok(None);
        }
        self.commands.poll_task(queue, wait).await
    }

    pub async fn heartbeat_task(&self, id: Uuid, token: &str) -> Result<DateTime<Utc>, EngineError> {
        self.commands.heartbeat_task(id, token).await
    }

    pub async fn complete_task(&self, id: Uuid, token: &str, output: serde_json::Value) -> Result<(), EngineError> {
        self.commands.complete_task(id, token, output).await
    }

    pub async fn fail_task(&self, id: Uuid, token: &str, error: String, retryable: bool) -> Result<(), EngineError> {
        self.commands.fail_task(id, token, error, retryable).await
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_owned()).unwrap_or_else(|_| "trellis".to_owned())
}
