//! Turns one machine step into the rows it writes — still pure: the clock reading and the
//! jitter are passed in. This is the seam between the state machine and the store.

use super::bad_end;
use super::machine::{apply, Command, Event, InstanceState, NodeState};
use super::plan::Plan;
use super::trace::{NodeStep, Tracer};
use crate::store::{ChildEnd, InstanceRow, InstanceUpdate, NewWork, NodeAttempt, Snapshot, Work, Writes};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};
use trellis_model::config::NodeKind;
use trellis_model::{InstanceStatus, NodeStatus};

/// What happened, beyond the machine's event: the data to record with it.
#[derive(Debug, Clone, Default)]
pub struct Detail {
    /// When the attempt actually began executing (dispatch time is recorded until then).
    pub started_at: Option<DateTime<Utc>>,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// Extra work the node's suspension needs (its timer, its task), written only if the
    /// event applies.
    pub work: Vec<NewWork>,
    /// A `Start` admitting an instance that waited in the queue for a slot.
    pub from_queue: bool,
    /// What the attempt logged (a script's `console` lines, already bounded): kept on the
    /// attempt's span.
    pub logs: Vec<String>,
    /// The called service asked to be left alone this long (429 or 503 with `Retry-After`):
    /// under a shared limit, the limit pauses and the attempt is put back, not failed.
    pub busy_for: Option<std::time::Duration>,
}

/// The machine state stored in `snapshot`.
pub fn state_of(plan: &Plan, snapshot: &Snapshot) -> InstanceState {
    let mut state = InstanceState::new(plan);
    state.status = snapshot.instance.status;
    for row in &snapshot.nodes {
        if let Some(node) = state.nodes.get_mut(row.position as usize) {
            *node =
                NodeState { status: row.status, attempts: row.attempts.max(0) as u32, outcome: row.outcome.clone() };
        }
    }
    state
}

/// Applies `event` to the stored instance and returns the rows to write (empty if the
/// event no longer applies). `jitter` in [0, 1) spreads retry delays.
pub fn decide(
    plan: &Plan,
    snapshot: &Snapshot,
    event: Event,
    detail: &Detail,
    now: DateTime<Utc>,
    jitter: f64,
) -> Writes {
    let before = state_of(plan, snapshot);
    let mut after = before.clone();
    let ended_attempt = ended_attempt(plan, &event);
    // The status a retry puts the instance in (it may also finish in the same step).
    let retried = match &event {
        Event::Retry { admit, .. } => Some(if *admit { InstanceStatus::Running } else { InstanceStatus::Queued }),
        _ => None,
    };
    let commands = apply(plan, &mut after, event.clone());
    // A suspended node that fails into a retry keeps its state (waiting, same attempt);
    // only the scheduled retry tells the event applied.
    if after == before && commands.is_empty() {
        return Writes::default();
    }
    // A retry begins the next run: everything it records belongs to that run's span.
    let next_run;
    let instance = if retried.is_some() {
        next_run = InstanceRow { run: snapshot.instance.run + 1, started_at: Some(now), ..snapshot.instance.clone() };
        &next_run
    } else {
        &snapshot.instance
    };
    let step = Applied {
        tracer: Tracer { plan, instance, now },
        snapshot,
        detail,
        before: &before,
        after: &after,
        retried,
        started: matches!(event, Event::Start),
    };
    let mut writes = Writes { ended_attempts: ended_attempt.into_iter().collect(), ..Writes::default() };
    step.begin(&mut writes);
    node_rows(&step.tracer, snapshot, (&before, &after), (&event, event_node(&event)), detail, &commands, &mut writes);
    writes.new_work.extend(detail.work.iter().cloned());
    for command in &commands {
        step.command(command, jitter, &mut writes);
    }
    if strands_children(plan, &event, &commands) {
        writes.new_work.push(NewWork::due(Work::CancelChildren, now));
    }
    step.status_change(&mut writes);
    writes
}

/// One applied event, as `decide` turns it into writes.
struct Applied<'a> {
    tracer: Tracer<'a>,
    snapshot: &'a Snapshot,
    detail: &'a Detail,
    before: &'a InstanceState,
    after: &'a InstanceState,
    /// The status a retry put the instance in.
    retried: Option<InstanceStatus>,
    /// A `Start`: the instance is admitted.
    started: bool,
}

impl Applied<'_> {
    /// A retry's or an admission's instance row, history and instance timeout.
    fn begin(&self, writes: &mut Writes) {
        let (plan, now) = (self.tracer.plan, self.tracer.now);
        if let Some(status) = self.retried {
            writes.instance = Some(InstanceUpdate { restart: true, ..update(status, Some(now), None) });
            writes.events.extend(self.tracer.retried(self.before.status, status));
            if let (Some(ms), InstanceStatus::Running) = (plan.timeout_ms, status) {
                writes.new_work.push(NewWork::due(Work::InstanceTimeout, now + ms_duration(ms)));
            }
        }
        if self.started {
            writes.instance = Some(update(InstanceStatus::Running, Some(now), None));
            writes.events.extend(self.tracer.admitted(self.detail.from_queue));
            if let Some(ms) = plan.timeout_ms {
                writes.new_work.push(NewWork::due(Work::InstanceTimeout, now + ms_duration(ms)));
            }
        }
    }

    /// The work a machine command makes, or the instance's end.
    fn command(&self, command: &Command, jitter: f64, writes: &mut Writes) {
        let (plan, now) = (self.tracer.plan, self.tracer.now);
        match *command {
            Command::Dispatch { node, attempt } => {
                let at = NodeAttempt::new(&plan.nodes[node].id, attempt);
                writes.new_work.push(NewWork::due(Work::Run(at.clone()), now));
                // A map's timeout is each item's (`engine/map/`), not its attempt's.
                let timed = plan.nodes[node].timeout_ms.filter(|_| plan.nodes[node].kind != NodeKind::Map);
                if let Some(ms) = timed {
                    writes.new_work.push(NewWork::due(Work::NodeTimeout(at), now + ms_duration(ms)));
                }
            }
            Command::ScheduleRetry { node, attempt, delay_ms } => {
                let delay = equal_jitter(delay_ms, jitter);
                let at = NodeAttempt::new(&plan.nodes[node].id, attempt);
                writes.new_work.push(NewWork::due(Work::Retry(at), now + ms_duration(delay)));
            }
            Command::Finish { status, failed_node } => self.finish(status, failed_node, writes),
        }
    }

    /// The instance ends: its output or error, its history entry, its parent's wake, and no
    /// work left behind.
    fn finish(&self, status: InstanceStatus, failed_node: Option<usize>, writes: &mut Writes) {
        let (plan, now) = (self.tracer.plan, self.tracer.now);
        // A retry whose re-run nodes are all skipped at once still begins a run.
        let restart = self.retried.is_some();
        let mut u = InstanceUpdate { restart, started_at: restart.then_some(now), ..update(status, None, Some(now)) };
        u.output = Some(final_output(plan, self.snapshot, writes, self.after));
        u.error = finish_error(plan, status, failed_node, self.detail);
        u.failure = failure(plan, status, failed_node, u.error.as_deref());
        // What this step already recorded: a retry's new status, or an admission
        // (which closed the queue wait) when a retried run finishes on admission.
        let from = match (self.retried, self.started) {
            (Some(status), _) => status,
            (None, true) => InstanceStatus::Running,
            (None, false) => self.before.status,
        };
        writes.events.extend(self.tracer.finished(from, status, u.error.clone()));
        writes.wake = parent_wake(&self.snapshot.instance, status, &u, now);
        let error = u.error.clone();
        let alert = bad_end::alert_item(self.tracer.instance.run, status, error.as_deref(), u.failure.as_ref(), now);
        writes.instance = Some(u);
        writes.clear_work = true;
        writes.new_work.clear();
        let run = self.tracer.instance.run;
        writes.new_work.extend(bad_end::failure_handler_item(plan, run, status, failed_node, error, now));
        writes.new_work.extend(alert);
    }

    /// A status the machine changed that nothing above wrote (a pause, a resume).
    fn status_change(&self, writes: &mut Writes) {
        let (before, after) = (self.before.status, self.after.status);
        if writes.instance.is_none() && after != before {
            writes.instance = Some(update(after, None, None));
            writes.events.push(self.tracer.instance_change(after, Some(before), None));
        }
    }
}

/// The attempt `event` ends, when it may have left work behind (see `may_leave_work`).
fn ended_attempt(plan: &Plan, event: &Event) -> Option<(String, i32)> {
    match event {
        Event::Succeeded { node, attempt, .. }
        | Event::Failed { node, attempt, .. }
        | Event::Lost { node, attempt }
            if may_leave_work(plan, event) =>
        {
            Some((plan.nodes[*node].id.clone(), *attempt as i32))
        }
        _ => None,
    }
}

/// The work item that completes the parent's `subworkflow` attempt when a child instance
/// ends: written in the child's finishing transaction, so the parent cannot miss it.
fn parent_wake(
    child: &InstanceRow,
    status: InstanceStatus,
    end: &InstanceUpdate,
    now: DateTime<Utc>,
) -> Option<(uuid::Uuid, NewWork)> {
    let parent = child.parent_instance_id?;
    // A child is started with its parent, node and attempt together (`start.rs`).
    debug_assert!(
        child.parent_node_id.is_some() && child.parent_attempt.is_some(),
        "a child without its parent's attempt"
    );
    let attempt = NodeAttempt { node: child.parent_node_id.clone()?, attempt: child.parent_attempt? };
    let end = ChildEnd { child: child.id, status, output: end.output.clone(), error: end.error.clone() };
    Some((parent, NewWork::due(Work::ChildDone { attempt, end }, now)))
}

/// Whether this step may leave a child instance running that no attempt waits for: the
/// instance ended other than by succeeding (canceled, failed, timed out), or a `subworkflow`
/// attempt ended without its child (it timed out, or its process died).
fn strands_children(plan: &Plan, event: &Event, commands: &[Command]) -> bool {
    // A map may run its items as children too.
    let is_sub =
        |node: usize| plan.nodes.get(node).is_some_and(|n| matches!(n.kind, NodeKind::Subworkflow | NodeKind::Map));
    let ended_early = match event {
        Event::Failed { node, timed_out: true, .. } | Event::Lost { node, .. } => is_sub(*node),
        _ => false,
    };
    let ended_badly =
        commands.iter().any(|c| matches!(c, Command::Finish { status, .. } if *status != InstanceStatus::Succeeded));
    ended_early || (ended_badly && (0..plan.nodes.len()).any(is_sub))
}

/// The node rows the step changed, with their history entries.
fn node_rows(
    tracer: &Tracer<'_>,
    snapshot: &Snapshot,
    (before, after): (&InstanceState, &InstanceState),
    (event, event_node): (&Event, Option<usize>),
    detail: &Detail,
    commands: &[Command],
    writes: &mut Writes,
) {
    let now = tracer.now;
    for (i, (old, new)) in before.nodes.iter().zip(&after.nodes).enumerate() {
        if old == new && Some(i) != event_node {
            continue;
        }
        let Some(stored) = snapshot.row_at(i) else { continue };
        let mut row = stored.clone();
        row.status = new.status;
        row.attempts = new.attempts as i32;
        row.outcome = new.outcome.clone();
        if new.attempts != old.attempts {
            row.started_at = Some(now);
            row.error = None;
        }
        if new.status == NodeStatus::Pending && old.status != NodeStatus::Pending {
            // Reset by a retry: the last run's result no longer stands.
            (row.output, row.error, row.started_at, row.ended_at) = (None, None, None, None);
        }
        let is_event_node = Some(i) == event_node;
        // Never before its dispatch was recorded: an attempt run ahead of that commit
        // (`ahead.rs`) began before the time the commit records for it.
        let execution_started_at =
            detail.started_at.map(|at| row.started_at.map_or(at, |dispatched| at.max(dispatched)));
        if is_event_node {
            if execution_started_at.is_some() {
                row.started_at = execution_started_at;
            }
            if let Some(output) = &detail.output {
                row.output = Some(output.clone());
            }
            if detail.error.is_some() {
                row.error = detail.error.clone();
            }
        }
        if new.status.is_terminal() && !old.status.is_terminal() {
            row.ended_at = Some(now);
        }
        let step = NodeStep {
            index: i,
            old: stored,
            event,
            commands,
            error: if is_event_node { detail.error.as_deref() } else { None },
            output: if is_event_node { detail.output.as_ref() } else { None },
            execution_started_at: if is_event_node { execution_started_at } else { None },
            logs: if is_event_node { &detail.logs } else { &[] },
        };
        tracer.node(&step, &mut row, &mut writes.events);
        writes.nodes.push(row);
    }
}

/// Whether the attempt `event` ends may have stored work left that must go with it. An
/// attempt's result arrives through its own work item (the run item, its delay's resume item,
/// its task), which the transition consumes as its fence, or through a signal, which has none.
/// What can be left is a timeout timer (its node has a timeout) or, when that timer is what
/// ends the attempt, the item the attempt was still on. Skipping the delete otherwise saves a
/// statement per step; a wrongly kept item would only be claimed later and change nothing
/// (the attempt is no longer current).
fn may_leave_work(plan: &Plan, event: &Event) -> bool {
    match event {
        Event::Failed { timed_out: true, .. } => true,
        Event::Succeeded { node, .. } | Event::Failed { node, .. } | Event::Lost { node, .. } => {
            plan.nodes[*node].timeout_ms.is_some()
        }
        _ => false,
    }
}

fn event_node(event: &Event) -> Option<usize> {
    match event {
        Event::Suspended { node, .. }
        | Event::Succeeded { node, .. }
        | Event::Failed { node, .. }
        | Event::Lost { node, .. }
        | Event::RetryDue { node, .. } => Some(*node),
        _ => None,
    }
}

fn update(
    status: InstanceStatus,
    started_at: Option<DateTime<Utc>>,
    ended_at: Option<DateTime<Utc>>,
) -> InstanceUpdate {
    InstanceUpdate { status, output: None, error: None, failure: None, started_at, ended_at, restart: false }
}

/// A retry's wait, "equal jitter": between half and all of `delay_ms`, `jitter` in [0, 1).
pub fn equal_jitter(delay_ms: u64, jitter: f64) -> u64 {
    delay_ms / 2 + ((delay_ms / 2) as f64 * jitter) as u64
}

/// `ms` as a duration, capped at the validator's ten-year bound so that adding it to a time
/// can never overflow (a stored definition from before the bound existed included).
pub fn ms_duration(ms: u64) -> Duration {
    Duration::milliseconds(ms.min(trellis_model::validate::MAX_DURATION_MS) as i64)
}

/// The instance's output: the outputs of its succeeded sink nodes (those with no
/// outgoing edges), by node id.
fn final_output(plan: &Plan, snapshot: &Snapshot, writes: &Writes, state: &InstanceState) -> Value {
    let mut out = Map::new();
    for (i, node) in plan.nodes.iter().enumerate() {
        if !plan.outgoing[i].is_empty() || state.nodes[i].status != NodeStatus::Succeeded {
            continue;
        }
        let row = writes.nodes.iter().find(|r| r.position as usize == i).or_else(|| snapshot.row_at(i));
        let output = row.and_then(|r| r.output.as_ref()).cloned().unwrap_or(Value::Null);
        out.insert(node.id.clone(), output);
    }
    Value::Object(out)
}

fn finish_error(plan: &Plan, status: InstanceStatus, failed_node: Option<usize>, detail: &Detail) -> Option<String> {
    match status {
        InstanceStatus::Failed => {
            let node = failed_node.map(|i| plan.nodes[i].id.as_str()).unwrap_or("?");
            Some(format!("node `{node}` failed: {}", detail.error.as_deref().unwrap_or("no error message")))
        }
        InstanceStatus::TimedOut => Some("the instance exceeded its timeout".to_owned()),
        InstanceStatus::Canceled => Some("canceled".to_owned()),
        _ => None,
    }
}

/// What failure triage groups a failed or timed-out instance by: the node that failed and the
/// class of the instance's error.
fn failure(
    plan: &Plan,
    status: InstanceStatus,
    failed_node: Option<usize>,
    error: Option<&str>,
) -> Option<(Option<String>, String)> {
    if !matches!(status, InstanceStatus::Failed | InstanceStatus::TimedOut) {
        return None;
    }
    let node = failed_node.map(|i| plan.nodes[i].id.clone());
    Some((node, trellis_model::failure::error_class(error.unwrap_or_default())))
}
