//! The pure instance state machine: `(state, event) -> (state', commands)`.
//!
//! It decides which nodes run, when an instance is finished and how; it does no I/O and
//! reads no clock. `effects.rs` turns the new state into rows, and `commit/` writes them
//! (with the commands' work items) in one store transaction; `runner.rs` carries out the
//! attempts the commands start. Events that no longer apply (a completion of an
//! attempt that was already retried, timed out or canceled) change nothing, which is what
//! makes recording a completion exactly-once even when execution is at-least-once.

use super::plan::Plan;
use trellis_model::retry::{retry_set as model_retry_set, RetryRoots};
use trellis_model::{EdgeWhen, InstanceStatus, NodeStatus};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub status: NodeStatus,
    /// Attempts started so far; the running attempt's number.
    pub attempts: u32,
    /// For a succeeded `branch`: the outcome label it chose.
    pub outcome: Option<String>,
}

/// An instance's state, with `nodes` indexed like [`Plan::nodes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceState {
    pub status: InstanceStatus,
    pub nodes: Vec<NodeState>,
}

impl InstanceState {
    pub fn new(plan: &Plan) -> Self {
        let fresh = NodeState { status: NodeStatus::Pending, attempts: 0, outcome: None };
        InstanceState { status: InstanceStatus::Queued, nodes: vec![fresh; plan.nodes.len()] }
    }

    fn running(&self) -> usize {
        self.nodes.iter().filter(|n| n.status == NodeStatus::Running).count()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The instance was admitted and may run.
    Start,
    /// The attempt is suspended on a timer, a signal or an external worker.
    Suspended {
        node: usize,
        attempt: u32,
    },
    Succeeded {
        node: usize,
        attempt: u32,
        outcome: Option<String>,
    },
    Failed {
        node: usize,
        attempt: u32,
        retryable: bool,
        timed_out: bool,
    },
    /// The process running the attempt died (its lease expired): not the node's fault, so
    /// it is retried even beyond `max_attempts`, within [`LOST_ATTEMPT_ALLOWANCE`].
    Lost {
        node: usize,
        attempt: u32,
    },
    /// The backoff before attempt `attempt` is over.
    RetryDue {
        node: usize,
        attempt: u32,
    },
    Cancel,
    TimedOut,
    /// An operator paused the instance: nothing new is dispatched until `Resume`, while
    /// running attempts finish and timers keep firing (their results are recorded).
    Pause,
    /// Dispatches whatever became ready while paused, or finishes an instance whose last
    /// node ended while paused.
    Resume,
    /// An operator re-runs a finished instance: the nodes in `reset` (closed downstream
    /// here, whatever the caller passed) go back to pending, keeping their attempt counts
    /// so attempt numbers stay unique; the others keep their results. `admit`: whether a
    /// `max_concurrent_instances` slot is free (else it queues and waits for `Start`).
    Retry {
        reset: Vec<usize>,
        admit: bool,
    },
}

/// Where a retry starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryFrom {
    /// The nodes that failed, timed out or were canceled.
    Failed,
    /// Every node.
    Start,
    /// This node, and whatever did not succeed.
    Node(usize),
}

/// The nodes a retry from `from` runs again, in plan order: its roots and everything
/// downstream of them (empty: there is nothing to re-run).
pub fn retry_set(plan: &Plan, state: &InstanceState, from: &RetryFrom) -> Vec<usize> {
    // The rule lives in trellis-model so the instance page's preview cannot disagree with it.
    let mut statuses: Vec<NodeStatus> = state.nodes.iter().map(|n| n.status).collect();
    // A plan node without a state is no root of its own, only reached downstream.
    statuses.resize(plan.nodes.len(), NodeStatus::Succeeded);
    let edges: Vec<(usize, usize)> =
        plan.incoming.iter().enumerate().flat_map(|(to, ins)| ins.iter().map(move |e| (e.from, to))).collect();
    let roots = match from {
        RetryFrom::Start => RetryRoots::Start,
        RetryFrom::Failed => RetryRoots::Failed,
        RetryFrom::Node(x) => RetryRoots::Node(*x),
    };
    model_retry_set(&statuses, &edges, roots)
}

/// `roots` and every node reachable from them, as indexes in plan order.
fn downstream(plan: &Plan, mut marked: Vec<bool>) -> Vec<usize> {
    marked.resize(plan.nodes.len(), false);
    // Topological order: a node's predecessors are decided before it.
    for i in 0..plan.nodes.len() {
        if !marked[i] && plan.incoming[i].iter().any(|e| marked[e.from]) {
            marked[i] = true;
        }
    }
    marked.iter().enumerate().filter(|(_, m)| **m).map(|(i, _)| i).collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Execute attempt `attempt` of `node` now.
    Dispatch { node: usize, attempt: u32 },
    /// Deliver `RetryDue { node, attempt }` after `delay_ms`.
    ScheduleRetry { node: usize, attempt: u32, delay_ms: u64 },
    /// The instance reached `status`; drop whatever work is left for it.
    Finish { status: InstanceStatus, failed_node: Option<usize> },
}

/// Extra attempts a node gets for attempts lost to dying processes; past it the node fails,
/// so a node that crashes every process running it cannot loop forever.
pub const LOST_ATTEMPT_ALLOWANCE: u32 = 3;

/// Applies `event` to `state`, returning the commands that carry it out.
pub fn apply(plan: &Plan, state: &mut InstanceState, event: Event) -> Vec<Command> {
    let mut commands = Vec::new();
    let live = matches!(state.status, InstanceStatus::Running | InstanceStatus::Paused);
    match event {
        Event::Start if state.status == InstanceStatus::Queued => {
            state.status = InstanceStatus::Running;
            advance(plan, state, &mut commands);
        }
        Event::Suspended { node, attempt } if live && is_current(state, node, attempt, NodeStatus::Running) => {
            state.nodes[node].status = NodeStatus::Waiting;
            dispatch_ready(plan, state, &mut commands);
        }
        Event::Succeeded { node, attempt, outcome } if live && is_active(state, node, attempt) => {
            state.nodes[node].status = NodeStatus::Succeeded;
            state.nodes[node].outcome = outcome;
            advance(plan, state, &mut commands);
        }
        Event::Failed { node, attempt, retryable, timed_out } if live && is_active(state, node, attempt) => {
            let budget = if retryable { plan.max_attempts(node) } else { 0 };
            end_attempt(plan, state, node, attempt, budget, timed_out, &mut commands);
        }
        Event::Lost { node, attempt } if live && is_active(state, node, attempt) => {
            let budget = plan.max_attempts(node) + LOST_ATTEMPT_ALLOWANCE;
            end_attempt(plan, state, node, attempt, budget, false, &mut commands);
        }
        Event::RetryDue { node, attempt }
            if live && state.nodes[node].status == NodeStatus::Waiting && state.nodes[node].attempts + 1 == attempt =>
        {
            state.nodes[node].status = NodeStatus::Ready;
            dispatch_ready(plan, state, &mut commands);
        }
        Event::Pause if state.status == InstanceStatus::Running => state.status = InstanceStatus::Paused,
        Event::Resume if state.status == InstanceStatus::Paused => {
            state.status = InstanceStatus::Running;
            advance(plan, state, &mut commands);
        }
        Event::Retry { reset, admit } if state.status.is_terminal() => retry(plan, state, &reset, admit, &mut commands),
        Event::Cancel if !state.status.is_terminal() => finish(state, InstanceStatus::Canceled, None, &mut commands),
        Event::TimedOut if !state.status.is_terminal() => finish(state, InstanceStatus::TimedOut, None, &mut commands),
        _ => {}
    }
    commands
}

fn retry(plan: &Plan, state: &mut InstanceState, reset: &[usize], admit: bool, commands: &mut Vec<Command>) {
    let mut roots = vec![false; plan.nodes.len()];
    for &i in reset.iter().filter(|i| **i < plan.nodes.len()) {
        roots[i] = true;
    }
    let reset = downstream(plan, roots);
    if reset.is_empty() {
        return;
    }
    for i in reset {
        state.nodes[i].status = NodeStatus::Pending;
        state.nodes[i].outcome = None;
    }
    if admit {
        state.status = InstanceStatus::Running;
        advance(plan, state, commands);
    } else {
        state.status = InstanceStatus::Queued;
    }
}

/// Ends a failed attempt: retries it while `attempt < budget`, else the node fails, which
/// fails the instance unless an edge handles the failure.
fn end_attempt(
    plan: &Plan,
    state: &mut InstanceState,
    node: usize,
    attempt: u32,
    budget: u32,
    timed_out: bool,
    commands: &mut Vec<Command>,
) {
    if attempt < budget {
        state.nodes[node].status = NodeStatus::Waiting;
        let next = attempt + 1;
        commands.push(Command::ScheduleRetry { node, attempt: next, delay_ms: plan.backoff_ms(node, next) });
        dispatch_ready(plan, state, commands);
    } else {
        state.nodes[node].status = if timed_out { NodeStatus::TimedOut } else { NodeStatus::Failed };
        if plan.handles_failure(node) {
            advance(plan, state, commands);
        } else {
            finish(state, InstanceStatus::Failed, Some(node), commands);
        }
    }
}

fn is_current(state: &InstanceState, node: usize, attempt: u32, status: NodeStatus) -> bool {
    state.nodes.get(node).is_some_and(|n| n.status == status && n.attempts == attempt)
}

/// Running or suspended in exactly this attempt.
fn is_active(state: &InstanceState, node: usize, attempt: u32) -> bool {
    is_current(state, node, attempt, NodeStatus::Running) || is_current(state, node, attempt, NodeStatus::Waiting)
}

/// Resolves pending nodes whose predecessors are all finished, dispatches what may run,
/// and finishes the instance when nothing is left.
fn advance(plan: &Plan, state: &mut InstanceState, commands: &mut Vec<Command>) {
    // Topological order: a node skipped here is seen as finished by its successors below.
    for i in 0..plan.nodes.len() {
        if state.nodes[i].status == NodeStatus::Pending {
            if let Some(runs) = resolve(plan, state, i) {
                state.nodes[i].status = if runs { NodeStatus::Ready } else { NodeStatus::Skipped };
            }
        }
    }
    dispatch_ready(plan, state, commands);
    if state.status == InstanceStatus::Running && state.nodes.iter().all(|n| n.status.is_terminal()) {
        finish(state, InstanceStatus::Succeeded, None, commands);
    }
}

/// `None` while a predecessor is unfinished; then whether the node runs. It runs when at
/// least one incoming edge was taken and none was refused; edges from skipped nodes count
/// as neither, which is what lets a join after a branch run on the branch that was taken.
fn resolve(plan: &Plan, state: &InstanceState, node: usize) -> Option<bool> {
    let mut taken = plan.incoming[node].is_empty();
    for edge in &plan.incoming[node] {
        let source = &state.nodes[edge.from];
        if !source.status.is_terminal() {
            return None;
        }
        if source.status == NodeStatus::Skipped || source.status == NodeStatus::Canceled {
            continue;
        }
        let fires = match &edge.when {
            EdgeWhen::Success => source.status == NodeStatus::Succeeded,
            EdgeWhen::Failure => source.status.is_failure(),
            EdgeWhen::Always => true,
            EdgeWhen::Outcome(label) => {
                source.status == NodeStatus::Succeeded && source.outcome.as_deref() == Some(label.as_str())
            }
        };
        // A branch's edges for the outcomes it did not choose are not a refusal: those
        // paths are simply not taken.
        let refused = !fires && !matches!(edge.when, EdgeWhen::Outcome(_));
        if refused {
            return Some(false);
        }
        taken |= fires;
    }
    Some(taken)
}

/// Starts ready nodes, in topological order, while the instance's parallelism allows.
fn dispatch_ready(plan: &Plan, state: &mut InstanceState, commands: &mut Vec<Command>) {
    if state.status != InstanceStatus::Running {
        return;
    }
    let mut running = state.running();
    for i in 0..plan.nodes.len() {
        if running >= plan.max_parallel {
            break;
        }
        if state.nodes[i].status == NodeStatus::Ready {
            let node = &mut state.nodes[i];
            node.status = NodeStatus::Running;
            node.attempts += 1;
            commands.push(Command::Dispatch { node: i, attempt: node.attempts });
            running += 1;
        }
    }
}

fn finish(state: &mut InstanceState, status: InstanceStatus, failed_node: Option<usize>, commands: &mut Vec<Command>) {
    state.status = status;
    for node in state.nodes.iter_mut().filter(|n| !n.status.is_terminal()) {
        let was_running = matches!(node.status, NodeStatus::Running | NodeStatus::Waiting);
        node.status =
            if status == InstanceStatus::TimedOut && was_running { NodeStatus::TimedOut } else { NodeStatus::Canceled };
    }
    commands.push(Command::Finish { status, failed_node });
}

#[cfg(test)]
mod tests;
