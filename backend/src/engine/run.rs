//! The run part (`Runner`): the claim loop (`runner.rs`), running attempts (`attempt.rs`) and
//! ahead of their commit (`ahead.rs`), the timer wheel (`wheel.rs`), maps (`map/`) and
//! children (`children.rs`). It sits above every other part and is handed those it calls: the
//! commit path, the commands (a child's start, a cancel), the hooks (alerts, failure handlers)
//! and admission. The commit path runs what it leased to this process back through
//! `RunLeased` (`runner.rs`). This file holds the part's state; the files above, its work.

use super::admission::Admission;
use super::alert_items::Alerts;
use super::commands::Commands;
use super::commit::Committer;
use super::failure_handler::FailureHandlers;
use super::nodes::Runtime;
use super::outputs::OutputCaps;
use super::plans::Plans;
use super::reserve::Workers;
use super::wakes::Wakes;
use crate::events::EventBus;
use crate::store::{CatalogStore, InstanceStore, LimitStore, MapStore, WorkQueue};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// The run part: what the claim loop, attempts, the wheel, maps and children use.
pub(super) struct Runner {
    /// Claims and leases: the claim loop, the wheel, an attempt's renewals.
    pub(super) work: Arc<dyn WorkQueue>,
    /// Instances and their children, as handling an item and a child's end read them.
    pub(super) instances: Arc<dyn InstanceStore>,
    /// A map node's items.
    pub(super) map_items: Arc<dyn MapStore>,
    /// The version a `subworkflow` node or map item calls.
    pub(super) catalog: Arc<dyn CatalogStore>,
    /// Shared limits: places for the attempts of nodes that name one (`limited.rs`).
    pub(super) limits: Arc<dyn LimitStore>,
    /// Places asked for and given back together (`limit_lane.rs`).
    pub(super) limit_lane: super::limit_lane::LimitLane,
    /// What `approval` nodes ask (`approvals/`).
    pub(super) approvals: Arc<dyn crate::store::ApprovalStore>,
    /// Where node attempts run: the sandbox, the HTTP client, the vault.
    pub(super) runtime: Runtime,
    pub(super) plans: Arc<Plans>,
    pub(super) wakes: Arc<Wakes>,
    pub(super) workers: Arc<Workers>,
    pub(super) committer: Arc<Committer>,
    pub(super) commands: Arc<Commands>,
    pub(super) admission: Arc<Admission>,
    pub(super) alerts: Alerts,
    pub(super) failure_handlers: FailureHandlers,
    pub(super) bus: Arc<EventBus>,
    /// Nodes this process no longer runs ahead of their dispatch's commit (`ahead.rs`).
    pub(super) too_slow: TooSlow,
    pub(super) output_caps: OutputCaps,
    /// The most items a `map` node runs over.
    pub(super) map_max_items: usize,
    /// How long a claim holds work (a map's writes keep trying through an outage this long).
    pub(super) lease_ms: u64,
    /// While held, the claim loop claims nothing and work leased by a start is left to its
    /// lease's expiry (then claimed once resumed).
    pub(super) hold: crate::cluster::Hold,
}

/// Nodes of a workflow, by id, a run ahead of which was dropped for taking too long: this
/// process runs them as usual from then on (a dropped run holds its sandbox worker until it ends,
/// and the attempt runs again).
#[derive(Default)]
pub(super) struct TooSlow(Mutex<HashSet<(Uuid, String)>>);

impl TooSlow {
    pub(super) fn contains(&self, workflow: Uuid, node: &str) -> bool {
        self.0.lock().expect("too slow to run ahead").contains(&(workflow, node.to_owned()))
    }

    pub(super) fn insert(&self, workflow: Uuid, node: &str) {
        self.0.lock().expect("too slow to run ahead").insert((workflow, node.to_owned()));
    }
}
