//! Two runs side by side (`/compare?a=…&b=…`): the nodes of both (matched by id, so runs of
//! different versions or workflows still compare), each with its status, attempts and duration in
//! either run, and the first node, in topological order, whose status or output differs. The
//! components only draw what this computes.

pub mod json_diff;

use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use trellis_model::api::{InstanceDetail, NodeView};
use trellis_model::{Definition, NodeStatus};

/// One side: the run and the version it ran.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub run: &'a InstanceDetail,
    pub definition: &'a Definition,
}

/// What one node did in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRun {
    pub status: NodeStatus,
    pub attempts: i32,
    pub duration_ms: Option<i64>,
    pub output: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeRow {
    pub id: String,
    /// `None`: the node is not in that run's version.
    pub a: Option<NodeRun>,
    pub b: Option<NodeRun>,
    /// Status, output or presence differ.
    pub differs: bool,
}

impl NodeRow {
    /// B's duration minus A's, when both ended.
    pub fn delta_ms(&self) -> Option<i64> {
        Some(self.b.as_ref()?.duration_ms? - self.a.as_ref()?.duration_ms?)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Every node of either version, in topological order of both graphs together.
    pub rows: Vec<NodeRow>,
    /// The first row that differs.
    pub first_difference: Option<String>,
    /// Set when the runs are of different workflows or versions.
    pub note: Option<String>,
}

pub fn compare(a: Side<'_>, b: Side<'_>) -> Comparison {
    let rows: Vec<NodeRow> = order(a.definition, b.definition)
        .into_iter()
        .map(|id| {
            let (run_a, run_b) = (node_run(a, &id), node_run(b, &id));
            let differs = match (&run_a, &run_b) {
                (Some(x), Some(y)) => x.status != y.status || x.output != y.output,
                _ => true,
            };
            NodeRow { id, a: run_a, b: run_b, differs }
        })
        .collect();
    let first_difference = rows.iter().find(|r| r.differs).map(|r| r.id.clone());
    Comparison { rows, first_difference, note: note(a.run, b.run) }
}

fn node_run(side: Side<'_>, id: &str) -> Option<NodeRun> {
    side.definition.nodes.iter().find(|n| n.id == id)?;
    let view: Option<&NodeView> = side.run.nodes.iter().find(|n| n.id == id);
    Some(match view {
        Some(n) => NodeRun {
            status: n.status,
            attempts: n.attempts,
            duration_ms: duration_ms(n.started_at, n.ended_at),
            output: n.output.clone(),
        },
        None => NodeRun { status: NodeStatus::Pending, attempts: 0, duration_ms: None, output: None },
    })
}

/// What node `id` ended with in `run`, as Compare shows it: its output, or `{"error": …}` when it
/// failed without one (a failed node's `null` says nothing), or `null` when it has neither.
pub fn node_outcome(run: &InstanceDetail, id: &str) -> Value {
    match run.nodes.iter().find(|n| n.id == id) {
        Some(NodeView { output: Some(output), .. }) => output.clone(),
        Some(NodeView { error: Some(error), .. }) => serde_json::json!({ "error": error }),
        _ => Value::Null,
    }
}

fn duration_ms(started: Option<DateTime<Utc>>, ended: Option<DateTime<Utc>>) -> Option<i64> {
    Some((ended? - started?).num_milliseconds().max(0))
}

/// What differs between the runs themselves, beyond their nodes.
fn note(a: &InstanceDetail, b: &InstanceDetail) -> Option<String> {
    let (a, b) = (&a.summary, &b.summary);
    if a.workflow_id != b.workflow_id {
        let name =
            |s: &trellis_model::api::InstanceSummary| s.workflow_name.clone().unwrap_or_else(|| s.workflow_id.clone());
        return Some(format!(
            "Different workflows: A ran “{}”, B ran “{}”; nodes are matched by id.",
            name(a),
            name(b)
        ));
    }
    (a.version != b.version).then(|| format!("Different versions: A ran v{}, B ran v{}.", a.version, b.version))
}

/// The node ids of both definitions, each once, in topological order of their edges together:
/// a node comes after every node with an edge into it; among the ready ones, A's definition order
/// first, then B's. Should the two graphs together make a cycle, its nodes follow in that order.
pub fn order(a: &Definition, b: &Definition) -> Vec<String> {
    let mut ids: Vec<&str> = Vec::new();
    for n in a.nodes.iter().chain(&b.nodes) {
        if !ids.contains(&n.id.as_str()) {
            ids.push(&n.id);
        }
    }
    let rank: BTreeMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    for e in a.edges.iter().chain(&b.edges) {
        if let (Some(&f), Some(&t)) = (rank.get(e.from.as_str()), rank.get(e.to.as_str())) {
            edges.insert((f, t));
        }
    }
    let mut incoming = vec![0usize; ids.len()];
    edges.iter().for_each(|&(_, t)| incoming[t] += 1);
    let mut done = vec![false; ids.len()];
    let mut out = Vec::with_capacity(ids.len());
    while out.len() < ids.len() {
        // The first ready node; in a cycle, the first left.
        let next = (0..ids.len())
            .find(|&i| !done[i] && incoming[i] == 0)
            .or_else(|| (0..ids.len()).find(|&i| !done[i]))
            .expect("a node is left");
        done[next] = true;
        out.push(ids[next].to_owned());
        edges.iter().filter(|&&(f, _)| f == next).for_each(|&(_, t)| incoming[t] = incoming[t].saturating_sub(1));
    }
    out
}

/// The page comparing run `a` with run `b`.
pub fn page(a: &str, b: &str) -> String {
    use crate::urls::encode_component;
    format!("/compare?a={}&b={}", encode_component(a), encode_component(b))
}

/// The page comparing failed run `a` with its workflow's newest success (found by the page).
pub fn with_last_success(a: &str) -> String {
    format!("/compare?a={}&b={LAST_SUCCESS}", crate::urls::encode_component(a))
}

/// `b` naming no run but "the newest success of A's workflow".
pub const LAST_SUCCESS: &str = "last-success";

#[cfg(test)]
mod tests;
