//! Property tests: drive `decide` over random DAGs with random outcomes (successes, failures,
//! retries, suspensions, lost attempts, signals, cancels, timeouts) and check that the
//! history it records is a well-formed trace.

use super::*;
use crate::engine::effects::{decide, Detail};
use crate::engine::machine::{retry_set, RetryFrom};
use crate::store::{NewWork, NodeAttempt, Snapshot, Work, Writes};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use trellis_model::config::NodeKind;
use trellis_model::{Definition, Edge, Node, RetryPolicy, Settings};

struct Sim {
    plan: Plan,
    snapshot: Snapshot,
    events: Vec<NewEvent>,
    work: Vec<NewWork>,
    now: DateTime<Utc>,
}

impl Sim {
    fn new(plan: Plan) -> Sim {
        let now = Utc::now();
        let instance = InstanceRow::for_test(InstanceStatus::Queued);
        let nodes = plan
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| std::sync::Arc::new(NodeRow::fresh(n.id.clone(), i as i32, NodeStatus::Pending)))
            .collect();
        let events = Tracer { plan: &plan, instance: &instance, now }.created(false);
        let mut sim = Sim { plan, snapshot: Snapshot { instance, nodes }, events, work: Vec::new(), now };
        sim.step(Event::Start, Detail::default());
        sim
    }

    fn step(&mut self, event: Event, detail: Detail) {
        self.now += chrono::Duration::milliseconds(7);
        let writes = decide(&self.plan, &self.snapshot, event, &detail, self.now, 0.5);
        self.apply(writes);
    }

    /// What the store does with the writes.
    fn apply(&mut self, w: Writes) {
        self.events.extend(w.events);
        for row in w.nodes {
            let i = row.position as usize;
            self.snapshot.nodes[i] = std::sync::Arc::new(row);
        }
        if let Some(u) = w.instance {
            if u.restart {
                self.snapshot.instance.run += 1;
                self.snapshot.instance.started_at = None;
            }
            self.snapshot.instance.started_at = self.snapshot.instance.started_at.or(u.started_at);
            self.snapshot.instance.status = u.status;
        }
        for (node, attempt) in &w.ended_attempts {
            self.work.retain(|x| {
                let of_attempt = x.work.attempt().is_some_and(|at| at.node == *node && at.attempt == *attempt);
                !of_attempt || matches!(x.work, Work::Retry(_))
            });
        }
        if w.clear_work {
            self.work.clear();
        }
        self.work.extend(w.new_work);
    }

    fn finished(&self) -> bool {
        self.snapshot.instance.status.is_terminal()
    }

    /// An operator retries the finished instance (a retry with nothing to re-run, or
    /// without a free slot, is what the engine would refuse or queue).
    fn retry(&mut self, choice: u8) {
        let state = crate::engine::effects::state_of(&self.plan, &self.snapshot);
        let from = match choice % 3 {
            0 => RetryFrom::Failed,
            1 => RetryFrom::Start,
            _ => RetryFrom::Node(usize::from(choice) % self.plan.nodes.len()),
        };
        let reset = retry_set(&self.plan, &state, &from);
        let admit = !choice.is_multiple_of(4);
        self.step(Event::Retry { reset, admit }, Detail::default());
        if self.snapshot.instance.status == InstanceStatus::Queued {
            self.step(Event::Start, Detail { from_queue: true, ..Detail::default() });
        }
    }

    /// Handles one work item (or, with none left, a waiting signal) as the runner would.
    fn advance(&mut self, choice: u8) {
        let waiting_signal = self
            .snapshot
            .nodes
            .iter()
            .position(|n| n.status == NodeStatus::Waiting && n.wait_kind == Some(WaitKind::Signal));
        // Now and then an operator pauses or resumes.
        if choice % 11 == 1 {
            let paused = self.snapshot.instance.status == InstanceStatus::Paused;
            return self.step(if paused { Event::Resume } else { Event::Pause }, Detail::default());
        }
        if choice.is_multiple_of(23) {
            return self
                .step(if choice.is_multiple_of(2) { Event::Cancel } else { Event::TimedOut }, Detail::default());
        }
        if self.work.is_empty() || (choice.is_multiple_of(5) && waiting_signal.is_some()) {
            let Some(node) = waiting_signal else { return self.step(Event::Cancel, Detail::default()) };
            let attempt = self.snapshot.nodes[node].attempts as u32;
            return self.step(Event::Succeeded { node, attempt, outcome: None }, Detail::default());
        }
        let item = self.work.remove(usize::from(choice) % self.work.len());
        let Some(at) = item.work.attempt() else { return };
        let node = self.plan.index_of(&at.node).unwrap_or(0);
        let attempt = at.number();
        let failure = Detail { error: Some("boom".into()), ..Detail::default() };
        let (event, detail) = match item.work {
            Work::Run(_) => match self.plan.nodes[node].kind {
                NodeKind::Delay => {
                    let at = NodeAttempt::new(&self.plan.nodes[node].id, attempt);
                    let resume = NewWork::due(Work::Resume(at), self.now);
                    (Event::Suspended { node, attempt }, Detail { work: vec![resume], ..Detail::default() })
                }
                NodeKind::WaitSignal | NodeKind::Subworkflow | NodeKind::Approval => {
                    (Event::Suspended { node, attempt }, Detail::default())
                }
                NodeKind::Noop
                | NodeKind::Http
                | NodeKind::Transform
                | NodeKind::Branch
                | NodeKind::Fail
                | NodeKind::Map
                | NodeKind::Task
                | NodeKind::Script => match choice % 4 {
                    0 => (Event::Failed { node, attempt, retryable: true, timed_out: false }, failure),
                    1 => (Event::Lost { node, attempt }, failure),
                    _ => (Event::Succeeded { node, attempt, outcome: None }, Detail::default()),
                },
            },
            Work::Resume(_) => (Event::Succeeded { node, attempt, outcome: None }, Detail::default()),
            Work::Retry(_) => (Event::RetryDue { node, attempt }, Detail::default()),
            Work::NodeTimeout(_)
            | Work::InstanceTimeout
            | Work::Task { .. }
            | Work::ChildDone { .. }
            | Work::CancelChildren
            | Work::OnFailure(_)
            | Work::Alert(_) => return,
        };
        self.step(event, detail);
    }
}

fn arb_plan() -> impl Strategy<Value = Plan> {
    (1usize..7)
        .prop_flat_map(|n| {
            let kinds = prop::collection::vec(
                prop::sample::select(vec![NodeKind::Noop, NodeKind::Delay, NodeKind::WaitSignal]),
                n,
            );
            let edges = prop::collection::vec(
                (0..n, 0..n, prop::sample::select(vec!["success", "failure", "always"])),
                0..(n * 2),
            );
            let retries = prop::collection::vec(1u32..3, n);
            (kinds, edges, retries, prop::option::of(1u32..3))
        })
        .prop_map(|(kinds, edges, retries, parallel)| {
            let nodes = kinds
                .iter()
                .zip(&retries)
                .enumerate()
                .map(|(i, (k, r))| {
                    let mut node = Node::new(format!("n{i}"), k.as_str());
                    node.retry = Some(RetryPolicy { max_attempts: *r, backoff_ms: 10, max_backoff_ms: 100 });
                    node
                })
                .collect();
            // Only forward edges, so the graph is a DAG.
            let mut seen = HashSet::new();
            let edges = edges
                .into_iter()
                .filter(|(a, b, _)| a < b && seen.insert((*a, *b)))
                .map(|(a, b, when)| Edge { from: format!("n{a}"), to: format!("n{b}"), when: when.to_owned().into() })
                .collect();
            let settings = Settings { max_parallel_nodes: parallel, ..Settings::default() };
            Plan::new(&Definition { nodes, edges, settings }).unwrap()
        })
}

/// The checks: seq-ordered entries form a trace.
fn check(sim: &Sim) {
    let mut open: HashMap<String, Span> = HashMap::new();
    let mut closed: HashSet<String> = HashSet::new();
    let mut node_status: HashMap<String, String> = HashMap::new();
    let mut instance_status: Option<String> = None;
    for (i, event) in sim.events.iter().enumerate() {
        match event.kind {
            EventKind::SpanStart => {
                let span: Span = serde_json::from_value(event.data.clone()).unwrap();
                if let Some(parent) = &span.parent_span_id {
                    assert!(open.contains_key(parent), "a span's parent is open when it starts: {span:?}");
                }
                assert!(
                    !closed.contains(&span.span_id) && open.insert(span.span_id.clone(), span).is_none(),
                    "span ids are unique"
                );
            }
            EventKind::SpanEnd => {
                let span: Span = serde_json::from_value(event.data.clone()).unwrap();
                let started = open.remove(&span.span_id).unwrap_or_else(|| panic!("ended without starting: {span:?}"));
                assert_eq!(
                    (&started.name, &started.parent_span_id, started.start),
                    (&span.name, &span.parent_span_id, span.start)
                );
                assert!(span.end.unwrap() >= span.start);
                closed.insert(span.span_id);
            }
            EventKind::Node => {
                let change: NodeChange = serde_json::from_value(event.data.clone()).unwrap();
                let previous =
                    node_status.insert(change.node.clone(), change.status.clone()).unwrap_or_else(|| "pending".into());
                assert_eq!(change.previous, previous, "node changes chain up");
            }
            EventKind::Instance => {
                let change: InstanceChange = serde_json::from_value(event.data.clone()).unwrap();
                check_instance_change(sim, i, &change, instance_status.as_deref());
                instance_status = Some(change.status);
            }
            EventKind::Counts => panic!("counts are never recorded"),
        }
    }
    assert!(open.is_empty(), "every span closes by the end: {:?}", open.values().map(|s| &s.name).collect::<Vec<_>>());
    let trace_ids: HashSet<String> =
        sim.events.iter().filter_map(|e| e.data.get("trace_id")).map(|t| t.to_string()).collect();
    assert_eq!(trace_ids.len(), 1);
}

/// The instance change at `sim.events[i]` follows the one before and ends the history, unless
/// a retry begins a new run.
fn check_instance_change(sim: &Sim, i: usize, change: &InstanceChange, before: Option<&str>) {
    if let Some(previous) = &change.previous {
        assert_eq!(Some(previous.as_str()), before, "instance changes chain up");
    }
    let terminal = InstanceStatus::parse(&change.status).unwrap().is_terminal();
    // The terminal status is the last entry, unless a retry begins a new run
    // (its instance span opens right after).
    let last = i + 1 == sim.events.len();
    if !terminal {
        assert!(!last, "the history ends with a terminal status");
    } else if !last {
        let next = &sim.events[i + 1];
        assert!(
            next.kind == EventKind::SpanStart && next.data["kind"] == SpanKind::Instance.as_str(),
            "only a retry follows the end: {:?}",
            sim.events[i.saturating_sub(3)..(i + 3).min(sim.events.len())]
                .iter()
                .map(|e| (e.kind, e.data.get("status").or(e.data.get("name")).cloned()))
                .collect::<Vec<_>>()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_run_records_a_well_formed_trace(plan in arb_plan(), choices in prop::collection::vec(any::<u8>(), 400)) {
        let mut sim = Sim::new(plan);
        let mut retries = 0;
        for choice in choices {
            if sim.finished() {
                if retries == 2 || choice % 2 == 0 {
                    break;
                }
                retries += 1;
                sim.retry(choice / 2);
                continue;
            }
            sim.advance(choice);
        }
        if !sim.finished() {
            sim.step(Event::Cancel, Detail::default());
        }
        check(&sim);
    }
}
