//! The durable DAG engine: a pure state machine at the core (`machine`, `effects`), a
//! shell that persists its decisions and runs nodes around it (`runner`), and the
//! commands the API calls (`start`, `control`, `tasks`, `actions`). One transition, from
//! an event to what it set in motion, reads top to bottom in `commit.rs`.

mod actions;
mod admission;
mod ahead;
mod alert_items;
mod bad_end;
pub mod callee;
mod children;
mod commit;
mod concurrency_key;
mod control;
pub mod effects;
mod error;
mod failure_handler;
pub mod input_schema;
pub mod json;
mod lineage;
pub mod machine;
mod map;
pub mod nodes;
pub mod outputs;
pub mod plan;
mod reserve;
mod results;
mod runner;
mod start;
mod start_lane;
mod tasks;
pub mod trace;
pub mod validate;
mod wheel;

pub use error::EngineError;
pub use lineage::Lineage;
pub use runner::context;
pub use start::{ParentLink, StartRequest, Started};
pub use tasks::TaskLease;

use crate::events::EventBus;
use crate::http_client::OutboundPolicy;
use crate::sandbox::Sandbox;
use crate::secrets::Vault;
use crate::store::DynStore;
use anyhow::Context;
use nodes::http::HttpRunner;
use nodes::Runtime;
use plan::Plan;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use tokio::sync::{Notify, Semaphore};
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
    /// Batches committed at once (see `commit.rs`); outcomes of one instance share one.
    pub commit_lanes: usize,
    /// The most items a `map` node runs over.
    pub map_max_items: usize,
    /// `TRELLIS_PUBLIC_URL`: the base of the instance links a failure handler gets.
    pub public_url: Option<String>,
}

pub struct Engine {
    store: DynStore,
    runtime: Runtime,
    config: EngineConfig,
    /// This process's identity in leases.
    owner: String,
    plans: RwLock<HashMap<(Uuid, i64), Arc<Plan>>>,
    /// Workflows with a version (among the cached plans) that limits admission: an instance
    /// of any of their versions finishing may free a slot.
    limited: RwLock<std::collections::HashSet<Uuid>>,
    wake: Notify,
    task_wake: Notify,
    /// A child of some `map` item ended (its `child_done` item was consumed): the maps
    /// waiting on children look now rather than at their next poll.
    map_children: Notify,
    permits: Arc<Semaphore>,
    /// Timers this process holds (claimed, not yet applied; see `wheel.rs`).
    timer_slots: Arc<Semaphore>,
    /// Set on shutdown: no new attempts are handed to this process's workers.
    draining: std::sync::atomic::AtomicBool,
    /// Where committed history entries go: live views, metrics, OpenTelemetry.
    pub bus: Arc<EventBus>,
    /// Where outcomes go to be committed in batches; set once the engine exists.
    lanes: std::sync::OnceLock<commit::Lanes>,
    /// Where starts wait to be written together (`start_lane.rs`).
    start_lane: start_lane::StartLane,
    /// Admissions asked for while one runs, folded into one more (`admission.rs`).
    admission_turns: admission::AdmissionTurns,
    /// Nodes this process no longer runs ahead of their dispatch's commit (`ahead.rs`).
    too_slow: ahead::TooSlow,
}

impl Engine {
    /// A new engine with its commit lanes running (so: inside a tokio runtime).
    pub fn new(store: DynStore, config: EngineConfig, sandbox: Arc<Sandbox>, secrets: Arc<Vault>) -> Arc<Engine> {
        let runtime = Runtime { http: HttpRunner::new(config.http_allow.clone()), sandbox, secrets };
        let lanes = config.commit_lanes;
        let engine = Arc::new(Engine {
            store,
            runtime,
            owner: format!("{}-{}", hostname(), Uuid::now_v7()),
            plans: RwLock::default(),
            limited: RwLock::default(),
            wake: Notify::new(),
            task_wake: Notify::new(),
            map_children: Notify::new(),
            permits: Arc::new(Semaphore::new(config.workers.max(1))),
            timer_slots: Arc::new(Semaphore::new(wheel::WHEEL_SLOTS)),
            draining: std::sync::atomic::AtomicBool::new(false),
            bus: Arc::new(EventBus::default()),
            lanes: std::sync::OnceLock::new(),
            start_lane: start_lane::StartLane::new(config.commit_lanes),
            admission_turns: admission::AdmissionTurns::default(),
            too_slow: ahead::TooSlow::default(),
            config,
        });
        let _ = engine.lanes.set(commit::Lanes::spawn(&engine, lanes));
        engine
    }

    /// Where user code runs: node expressions and scripts, and also validation, previews,
    /// concurrency keys and webhook mappings.
    /// The settings the engine runs with (the outbound policy, the public URL).
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The store this engine (and its server) writes through.
    pub fn store(&self) -> &DynStore {
        &self.store
    }

    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.runtime.sandbox
    }

    /// The secrets node attempts use (sealed with this process's master key).
    pub fn secrets(&self) -> &Arc<Vault> {
        &self.runtime.secrets
    }

    /// The caps on stored outputs (a script preview is held to the per-node one).
    pub fn output_caps(&self) -> outputs::OutputCaps {
        self.config.output_caps
    }

    fn lease(&self) -> chrono::Duration {
        effects::ms_duration(self.config.lease_ms)
    }

    /// The execution plan of a published version, cached: versions never change.
    pub(crate) async fn plan(&self, workflow: Uuid, version: i64) -> anyhow::Result<Arc<Plan>> {
        if let Some(plan) = self.cached_plan(workflow, version) {
            return Ok(plan);
        }
        let record = self.store.get_version(workflow, version).await?.context("the instance's version is missing")?;
        let mut plan = Plan::new(&record.definition.0).context("a published version is not a DAG")?;
        plan.workflow = workflow;
        plan.name = self.store.get_workflow(workflow).await?.map(|w| w.name).unwrap_or_default();
        let plan = Arc::new(plan);
        if plan.admission().any() {
            self.limited.write().expect("limited workflows").insert(workflow);
        }
        self.plans.write().expect("plan cache").insert((workflow, version), plan.clone());
        Ok(plan)
    }

    /// Whether a finished instance of `workflow` may have freed a slot: a version of it that
    /// this process has loaded limits admission (the latest one is loaded by every start;
    /// the admission sweep covers what a process has not seen).
    fn limits_admission(&self, workflow: Uuid) -> bool {
        self.limited.read().expect("limited workflows").contains(&workflow)
    }

    fn cached_plan(&self, workflow: Uuid, version: i64) -> Option<Arc<Plan>> {
        self.plans.read().expect("plan cache").get(&(workflow, version)).cloned()
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_owned()).unwrap_or_else(|_| "trellis".to_owned())
}
