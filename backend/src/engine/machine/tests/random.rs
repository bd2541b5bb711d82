//! The machine against random DAGs: random edge conditions, retry policies, scripted
//! results, pauses, retries and re-delivered events.

use super::super::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use trellis_model::config::NodeKind;
use trellis_model::{Definition, Edge, Node, RetryPolicy};

/// The edge rules, written independently of the machine: a node runs when no incoming edge
/// from a node that finished (not skipped or canceled) refuses it, and at least one fires
/// (or it has no incoming edges). Outcome edges that do not fire only mean "not this way".
fn should_run(p: &Plan, s: &InstanceState, node: usize) -> bool {
    let live: Vec<_> = p.incoming[node]
        .iter()
        .filter(|e| !matches!(s.nodes[e.from].status, NodeStatus::Skipped | NodeStatus::Canceled))
        .collect();
    let fires = |e: &&crate::engine::plan::PlanEdge| {
        let src = &s.nodes[e.from];
        match &e.when {
            EdgeWhen::Success => src.status == NodeStatus::Succeeded,
            EdgeWhen::Failure => matches!(src.status, NodeStatus::Failed | NodeStatus::TimedOut),
            EdgeWhen::Always => true,
            EdgeWhen::Outcome(l) => src.status == NodeStatus::Succeeded && src.outcome.as_ref() == Some(l),
        }
    };
    let refused = live.iter().any(|e| !fires(e) && !matches!(e.when, EdgeWhen::Outcome(_)));
    !refused && (p.incoming[node].is_empty() || live.iter().any(fires))
}

/// A random DAG with random edge conditions, retry policies and scripted results.
#[derive(Debug, Clone)]
struct Scenario {
    plan: Plan,
    /// results[node][attempt-1]: true = success (for a branch: outcome "true"/"false" by parity)
    results: Vec<Vec<bool>>,
    seed: u64,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (1usize..10).prop_flat_map(|n| {
        let edges = proptest::collection::vec((0..n, 0..n, 0u8..4), 0..n * 2);
        let nodes = proptest::collection::vec((1u32..4, proptest::collection::vec(any::<bool>(), 4), any::<bool>()), n);
        (edges, nodes, 1usize..4, any::<u64>()).prop_map(move |(edges, nodes, parallel, seed)| {
            let mut def = Definition::default();
            for (i, (attempts, _, is_branch)) in nodes.iter().enumerate() {
                let mut node = Node::new(format!("n{i}"), if *is_branch { "branch" } else { "noop" });
                node.retry = Some(RetryPolicy { max_attempts: *attempts, backoff_ms: 10, max_backoff_ms: 40 });
                def.nodes.push(node);
            }
            for (a, b, w) in edges {
                let (from, to) = (a.min(b), a.max(b));
                if from == to || def.edges.iter().any(|e| e.from == format!("n{from}") && e.to == format!("n{to}")) {
                    continue;
                }
                let when = if nodes[from].2 {
                    ["true", "false", "always", "failure"][w as usize]
                } else {
                    ["success", "success", "failure", "always"][w as usize]
                };
                def.edges.push(Edge { from: format!("n{from}"), to: format!("n{to}"), when: when.to_owned().into() });
            }
            let mut plan = Plan::new(&def).unwrap();
            plan.max_parallel = parallel;
            let by_id = |id: &str| nodes[id[1..].parse::<usize>().unwrap()].1.clone();
            let results = plan.nodes.iter().map(|n| by_id(&n.id)).collect();
            Scenario { plan, results, seed }
        })
    })
}

/// One random run of a scenario: the instance, the events in flight, and what the final
/// checks count.
struct Sim<'a> {
    p: &'a Plan,
    results: &'a [Vec<bool>],
    s: InstanceState,
    rng: u64,
    pending: Vec<Event>,
    delivered: Vec<Event>,
    succeeded: Vec<u32>,
    finishes: u32,
    toggles: u32,
    retries: u32,
    runs: u32,
    /// Attempts made before the last retry: the final checks judge the last run.
    base: Vec<u32>,
}

impl<'a> Sim<'a> {
    fn new(sc: &'a Scenario) -> Sim<'a> {
        let n = sc.plan.nodes.len();
        Sim {
            p: &sc.plan,
            results: &sc.results,
            s: InstanceState::new(&sc.plan),
            rng: sc.seed,
            pending: Vec::new(),
            delivered: Vec::new(),
            succeeded: vec![0; n],
            finishes: 0,
            toggles: 0,
            retries: 0,
            runs: 1,
            base: vec![0; n],
        }
    }

    /// xorshift: a number below `bound`.
    fn next(&mut self, bound: usize) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % bound as u64) as usize
    }

    fn apply(&mut self, event: Event) -> Vec<Command> {
        apply(self.p, &mut self.s, event)
    }

    /// Runs dispatched attempts to their scripted results (pending until delivered).
    fn carry_out(&mut self, commands: Vec<Command>) -> Result<(), TestCaseError> {
        for c in commands {
            match c {
                Command::Dispatch { node, attempt } => {
                    for e in &self.p.incoming[node] {
                        prop_assert!(self.s.nodes[e.from].status.is_terminal(), "{} started before {}", node, e.from);
                    }
                    let success = self.results[node][(attempt - 1) as usize % 4];
                    let is_branch = self.p.nodes[node].kind == NodeKind::Branch;
                    self.pending.push(if success {
                        let outcome = is_branch.then(|| if attempt % 2 == 1 { "true" } else { "false" }.to_owned());
                        Event::Succeeded { node, attempt, outcome }
                    } else {
                        Event::Failed { node, attempt, retryable: true, timed_out: false }
                    });
                }
                Command::ScheduleRetry { node, attempt, .. } => self.pending.push(Event::RetryDue { node, attempt }),
                Command::Finish { .. } => self.finishes += 1,
            }
        }
        Ok(())
    }

    /// Retries the finished run from a random point and checks what the retry kept.
    fn retry(&mut self) -> Result<Vec<Command>, TestCaseError> {
        self.retries += 1;
        let from = match self.next(3) {
            0 => RetryFrom::Failed,
            1 => RetryFrom::Start,
            _ => RetryFrom::Node(self.next(self.p.nodes.len())),
        };
        let reset = retry_set(self.p, &self.s, &from);
        let before = self.s.clone();
        let admit = self.next(2) == 0;
        let mut commands = self.apply(Event::Retry { reset: reset.clone(), admit });
        if reset.is_empty() {
            prop_assert_eq!(&self.s, &before, "a retry with nothing to re-run changes nothing");
            return Ok(commands);
        }
        self.runs += 1;
        self.base = before.nodes.iter().map(|n| n.attempts).collect();
        for (i, (old, new)) in before.nodes.iter().zip(&self.s.nodes).enumerate() {
            prop_assert!(new.attempts >= old.attempts, "attempt numbers never go back");
            if reset.contains(&i) {
                self.succeeded[i] = 0;
            } else {
                prop_assert_eq!(old, new, "a node outside the retry keeps its result");
            }
            if from == RetryFrom::Failed && old.status == NodeStatus::Succeeded {
                prop_assert!(!reset.contains(&i) || self.p.incoming[i].iter().any(|e| reset.contains(&e.from)));
            }
        }
        if self.s.status == InstanceStatus::Queued {
            prop_assert!(commands.is_empty());
            commands = self.apply(Event::Start);
        }
        Ok(commands)
    }

    /// Delivers a random pending event, or now and then re-delivers an old one.
    fn deliver(&mut self) -> Result<Vec<Command>, TestCaseError> {
        let event = if !self.delivered.is_empty() && self.next(5) == 0 {
            let at = self.next(self.delivered.len());
            self.delivered[at].clone()
        } else {
            let at = self.next(self.pending.len());
            self.pending.swap_remove(at)
        };
        let before: Vec<NodeStatus> = self.s.nodes.iter().map(|n| n.status).collect();
        let was_paused = self.s.status == InstanceStatus::Paused;
        let commands = self.apply(event.clone());
        if was_paused {
            prop_assert!(!commands.iter().any(|c| matches!(c, Command::Dispatch { .. })), "dispatched while paused");
            let alive = self.s.status == InstanceStatus::Running || self.s.status == InstanceStatus::Succeeded;
            prop_assert!(!alive, "only Resume leaves a pause alive");
        }
        for (i, n) in self.s.nodes.iter().enumerate() {
            if n.status == NodeStatus::Succeeded && before[i] != NodeStatus::Succeeded {
                self.succeeded[i] += 1;
            }
        }
        self.delivered.push(event);
        Ok(commands)
    }

    /// The run ended: every node finished once, by the edge rules.
    fn check_end(&self) -> Result<(), TestCaseError> {
        let s = &self.s;
        prop_assert!(self.pending.is_empty(), "did not terminate (after {} pauses and resumes)", self.toggles);
        prop_assert!(s.status.is_terminal(), "instance ended {:?}", s.status);
        prop_assert!(s.nodes.iter().all(|n| n.status.is_terminal()));
        prop_assert_eq!(self.finishes, self.runs, "one finish per run");
        prop_assert!(self.succeeded.iter().all(|&c| c <= 1), "a node completed twice");
        for (i, n) in s.nodes.iter().enumerate() {
            let ran = n.attempts > self.base[i];
            if n.status == NodeStatus::Skipped {
                prop_assert!(!ran, "a skipped node ran");
            }
            // Whatever ran or was skipped agrees with the edge rules, judged on the final states.
            if n.status == NodeStatus::Skipped || ran {
                prop_assert_eq!(should_run(self.p, s, i), ran, "node {} {:?}", i, n.status);
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Every instance terminates; no node starts before all its predecessors finish; no
    /// node completes twice; skipped nodes never run; parallelism stays within its cap.
    #[test]
    fn random_dags_terminate_and_keep_the_scheduling_invariants(sc in scenario()) {
        let mut sim = Sim::new(&sc);
        let mut commands = sim.apply(Event::Start);
        for _step in 0..10_000 {
            sim.carry_out(std::mem::take(&mut commands))?;
            prop_assert!(sim.s.running() <= sc.plan.max_parallel);
            // An operator pauses and resumes at random; a paused instance with nothing left
            // in flight is resumed, as an operator eventually would.
            let paused = sim.s.status == InstanceStatus::Paused;
            let toggle = (sim.pending.is_empty() && paused) || sim.next(6) == 0;
            if toggle && !sim.s.status.is_terminal() {
                commands = sim.apply(if paused { Event::Resume } else { Event::Pause });
                sim.toggles += 1;
                continue;
            }
            // A finished run is now and then retried, from a random point.
            if sim.pending.is_empty() && sim.s.status.is_terminal() && sim.retries < 2 && sim.next(2) == 0 {
                commands = sim.retry()?;
                continue;
            }
            if sim.pending.is_empty() {
                break;
            }
            commands = sim.deliver()?;
        }
        sim.check_end()?;
    }
}
