//! The commands the API (and triggers, children and failure handlers) call on the engine:
//! starting instances (`start.rs`), acting on one (`control.rs`: cancel, signal;
//! `actions.rs`: pause, resume, retry) and the task workers' protocol (`tasks.rs`). A part of
//! its own: it holds what those call — the store, the plans, this process's worker slots, the
//! commit path, the start lane, the bus, the task pollers' wake, the sandbox (concurrency
//! keys), the vault (a task's secrets) and the caps on what comes in — and nothing of the
//! runner: a command's transition goes through the commit path, which runs what it leased.

use super::commit::Committer;
use super::outputs::OutputCaps;
use super::plans::Plans;
use super::reserve::Workers;
use super::start_lane::StartLane;
use super::wakes::Wakes;
use crate::events::EventBus;
use crate::sandbox::Sandbox;
use crate::secrets::Vault;
use crate::store::DynStore;
use std::sync::Arc;

pub(super) struct Commands {
    /// Workflows and versions (on `Store` itself), instances, admission and tasks.
    pub(super) store: DynStore,
    pub(super) plans: Arc<Plans>,
    pub(super) workers: Arc<Workers>,
    pub(super) committer: Arc<Committer>,
    /// Where keyless starts wait to be written together.
    pub(super) start_lane: StartLane,
    pub(super) bus: Arc<EventBus>,
    pub(super) wakes: Arc<Wakes>,
    pub(super) sandbox: Arc<Sandbox>,
    pub(super) secrets: Arc<Vault>,
    /// Largest instance input, serialized.
    pub(super) max_input_bytes: usize,
    /// The caps a signal's payload or a task's output is held to.
    pub(super) output_caps: OutputCaps,
}
