//! The commands the API (and triggers, children and failure handlers) call on the engine:
//! starting instances (`start.rs`), acting on one (`control.rs`: cancel, signal;
//! `actions.rs`: pause, resume, retry) and the task workers' protocol (`tasks.rs`). A part of
//! its own: it holds what those call — the store's catalog, instances and work queue (three
//! traits: starts and actions want the first two, the task protocol the third), the plans,
//! this process's worker slots, the commit path, the start lane, the bus, the task pollers'
//! wake, the sandbox (concurrency keys), the vault (a task's secrets) and the caps on what
//! comes in — and nothing of the runner: a command's transition goes through the commit path,
//! which runs what it leased.

use super::commit::Committer;
use super::outputs::OutputCaps;
use super::plans::Plans;
use super::reserve::Workers;
use super::start_lane::StartLane;
use super::wakes::Wakes;
use crate::events::EventBus;
use crate::sandbox::Sandbox;
use crate::secrets::Vault;
use crate::store::{CatalogStore, DebounceStore, InstanceStore, WorkQueue};
use std::sync::Arc;

pub(super) struct Commands {
    /// The latest version a start or a retry runs.
    pub(super) catalog: Arc<dyn CatalogStore>,
    /// Starts, retries and the instances a command reads.
    pub(super) instances: Arc<dyn InstanceStore>,
    /// The task workers' protocol: claims, leases and the items behind them.
    pub(super) work: Arc<dyn WorkQueue>,
    pub(super) plans: Arc<Plans>,
    pub(super) workers: Arc<Workers>,
    pub(super) committer: Arc<Committer>,
    /// Where keyless starts wait to be written together.
    pub(super) start_lane: StartLane,
    pub(super) bus: Arc<EventBus>,
    pub(super) wakes: Arc<Wakes>,
    pub(super) sandbox: Arc<Sandbox>,
    pub(super) secrets: Arc<Vault>,
    /// The bursts `debounce` folds starts into (`debounce.rs`).
    pub(super) debounces: Arc<dyn DebounceStore>,
    /// Largest instance input, serialized.
    pub(super) max_input_bytes: usize,
    /// The caps a signal's payload or a task's output is held to.
    pub(super) output_caps: OutputCaps,
    /// Approvals people decide (`approvals/decide.rs`).
    pub(super) approvals: Arc<dyn crate::store::ApprovalStore>,
}
