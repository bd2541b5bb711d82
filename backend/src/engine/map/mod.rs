//! The `map` node: one attempt runs the inner node (or a sub-workflow) once per item of a
//! list, at most `max_parallel` at once, in the process that holds the attempt's lease.
//!
//! Durable per item: each item's row (`map_items`) is written as it starts and ends, in
//! batches fenced by the attempt's lease (`flush.rs`). An attempt that dies with its process
//! is `Lost` and run again; the new attempt keeps every item that succeeded with the same
//! value at the same index (`board.rs`) and runs the rest — so a kill -9 reruns at most the
//! items that were in flight. A retry from the failed nodes does the same; a retry from the
//! start forgets the items. Holding the lease makes `max_parallel` hold across processes.

mod board;
mod budget;
mod flush;
mod item;

use super::children::serves;
use super::nodes::{permanent, Attempt, NodeResult};
use super::plan::{Plan, PlanNode};
use super::run::Runner;
use crate::store::{Fence, MapItemRow, MapItemWrites};
use board::{Board, Slot};
use budget::Budget;
use futures_util::stream::{FuturesUnordered, StreamExt};
use item::{Inner, Job};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use trellis_model::map::{MapConfig, OnItemFailure};
use trellis_model::trace::ItemProgress;
use trellis_model::NodeStatus;
use uuid::Uuid;

/// A map attempt's failure that another attempt may get past.
fn passing(error: String) -> NodeResult {
    NodeResult::Failed { error, retryable: true }
}

impl Runner {
    /// Runs attempt `run` of map node `node` of `instance` to its output (or failure).
    pub(super) async fn run_map(
        self: &Arc<Self>,
        plan: &Plan,
        node: usize,
        instance: Uuid,
        (run, others_bytes): (&Attempt<'_>, usize),
        fence: &Fence,
    ) -> NodeResult {
        let config: MapConfig = match serde_json::from_value(run.node.config.clone()) {
            Ok(config) => config,
            Err(e) => return permanent(format!("invalid config: {e}")),
        };
        let items = match self.map_list(&config, run).await {
            Ok(items) => items,
            Err(failed) => return failed,
        };
        let stored = match self.map_items.map_items(instance, &run.node.id).await {
            Ok(rows) => rows,
            Err(e) => return passing(format!("could not read the map's items: {e}")),
        };
        let redactor = run.secrets.redactor();
        let mut board = Board::new(&items, &stored, &redactor);
        let (rows, drop_from) = board.opening_rows(&stored);
        let opening = MapItemWrites {
            fence,
            instance,
            workflow: plan.workflow,
            node: &run.node.id,
            rows: &rows,
            drop_from,
            events: &[],
        };
        match self.map_items.write_map_items(&opening).await {
            Ok(Some(_)) => {}
            Ok(None) => return passing("the map attempt lost its lease".into()),
            Err(e) => return passing(format!("could not record the map's items: {e}")),
        }
        let inner = match inner(&config, run.node) {
            Ok(inner) => inner,
            Err(failed) => return failed,
        };
        let lost = Arc::new(AtomicBool::new(false));
        let (updates, received) = tokio::sync::mpsc::unbounded_channel();
        let target = flush::Target {
            fence: fence.clone(),
            instance,
            workflow: plan.workflow,
            node: run.node.id.clone(),
            attempt: run.attempt,
            trace_id: run.context.pointer("/instance/trace_id").and_then(Value::as_str).unwrap_or_default().to_owned(),
            progress: ItemProgress {
                total: items.len() as u32,
                succeeded: board.reused() as u32,
                ..Default::default()
            },
            statuses: Default::default(),
        };
        let flusher = tokio::spawn(flush::flush_loop(self.clone(), target, received, lost.clone()));
        let job = Job {
            engine: self,
            plan,
            node,
            instance,
            attempt: run.attempt,
            inner,
            base: run.context.clone(),
            secrets: run.secrets,
            budget: Budget::new(self.output_caps, &run.node.id, others_bytes, board.reused_outputs()),
            redactor,
            traceparent: run.traceparent.clone(),
            updates,
        };
        let limits = (config.max_parallel(), config.on_item_failure);
        let stopped_early = drive(&job, &mut board, &items, limits, &lost).await;
        if stopped_early {
            self.cancel_item_children(instance, &run.node.id, run.attempt).await;
        }
        let over_cap = job.budget.refusal();
        drop(job);
        let _ = flusher.await;
        if lost.load(Ordering::SeqCst) {
            return passing("the map attempt lost its lease before its items were recorded".into());
        }
        if let Some(error) = over_cap {
            return permanent(error);
        }
        match board.outcome(config.on_item_failure) {
            Ok(output) => NodeResult::Done { output, outcome: None },
            Err(error) => permanent(error),
        }
    }

    /// The list `items` gives, within the cap on a map's items.
    async fn map_list(&self, config: &MapConfig, run: &Attempt<'_>) -> Result<Vec<Value>, NodeResult> {
        let job = crate::sandbox::Job::Eval(config.items.clone());
        let value = super::nodes::evaluate_one(&self.runtime.sandbox, run, job).await?;
        let cap = self.map_max_items;
        match value {
            Value::Array(items) if items.len() <= cap => Ok(items),
            Value::Array(items) => Err(permanent(format!(
                "`items` gave {} items; a map runs over at most {cap} (TRELLIS_MAP_MAX_ITEMS)",
                items.len()
            ))),
            other => Err(permanent(format!("`items` must give a list, but gave {}", json_kind(&other)))),
        }
    }

    /// Cancels the children of the map attempt's items still running (the map stopped at a
    /// failed item).
    async fn cancel_item_children(self: &Arc<Self>, instance: Uuid, node: &str, attempt: u32) {
        let Ok(children) = self.instances.children(instance).await else { return };
        let ours = children.iter().filter(|c| serves(c, node, attempt as i32) && !c.status.is_terminal());
        for child in ours {
            let _ = self.commands.cancel(child.id).await;
        }
    }
}

/// Runs the board's items, at most `max_parallel` at once, until all ended, (under `fail`)
/// one failed, one's output broke a cap (whatever the policy: the map's output could not hold
/// it), or the attempt lost its lease (the instance was canceled, say: its work is gone). True
/// if it stopped at a failure with items still to run or running: those are recorded as canceled.
async fn drive(
    job: &Job<'_>,
    board: &mut Board,
    items: &[Value],
    (max_parallel, policy): (usize, OnItemFailure),
    lost: &AtomicBool,
) -> bool {
    let todo: Vec<(usize, i32)> = board.todo().collect();
    let mut todo = todo.into_iter();
    let mut running = FuturesUnordered::new();
    let mut in_flight = std::collections::BTreeSet::new();
    let mut stop = false;
    loop {
        while !stop && running.len() < max_parallel {
            let Some((idx, prior)) = todo.next() else { break };
            in_flight.insert(idx);
            running.push(job.run_item(idx, &items[idx], &board.digests[idx], prior));
        }
        let Some((idx, end)) = running.next().await else { break };
        if lost.load(Ordering::SeqCst) {
            return false;
        }
        in_flight.remove(&idx);
        stop |= policy == OnItemFailure::Fail && end.status != NodeStatus::Succeeded;
        stop |= job.budget.refusal().is_some();
        board.slots[idx] = Slot::Done(end);
        if stop {
            break;
        }
    }
    drop(running);
    if !stop {
        return false;
    }
    for idx in in_flight.into_iter().chain(todo.map(|(idx, _)| idx)) {
        let row = MapItemRow {
            status: NodeStatus::Canceled,
            ended_at: Some(chrono::Utc::now()),
            ..board::pending(idx, &board.digests[idx], 0)
        };
        let _ = job.updates.send(flush::Update { row, item_type: job.inner.type_name() });
    }
    true
}

/// What each item runs, from the map's config.
fn inner(config: &MapConfig, map: &PlanNode) -> Result<Inner, NodeResult> {
    if let Some(w) = &config.workflow {
        let Ok(workflow) = w.workflow.trim().parse() else {
            return Err(permanent(format!("`workflow` is not a workflow id: {}", w.workflow)));
        };
        return Ok(Inner::Workflow { workflow, version: w.version });
    }
    let node = config.node.as_ref().ok_or_else(|| permanent("a map needs a `node` or a `workflow`".into()))?;
    let kind = node.known_kind().ok_or_else(|| permanent(format!("a map cannot run a `{}` node", node.kind)))?;
    Ok(Inner::Node(PlanNode { kind, config: node.config.clone(), retry: None, ..map.clone() }))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
