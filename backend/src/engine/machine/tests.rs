use super::*;
use proptest::prelude::*;
use trellis_model::config::NodeKind;
use trellis_model::{Definition, Edge, Node, RetryPolicy};

fn plan(nodes: &[&str], edges: &[(&str, &str, &str)]) -> Plan {
    let def = Definition {
        nodes: nodes.iter().map(|id| Node::new(*id, "noop")).collect(),
        edges: edges
            .iter()
            .map(|(a, b, when)| Edge { from: (*a).into(), to: (*b).into(), when: (*when).to_owned().into() })
            .collect(),
        ..Default::default()
    };
    Plan::new(&def).unwrap()
}

fn statuses(plan: &Plan, state: &InstanceState) -> Vec<(String, NodeStatus)> {
    plan.nodes.iter().zip(&state.nodes).map(|(n, s)| (n.id.clone(), s.status)).collect()
}

fn ok(node: usize, attempt: u32) -> Event {
    Event::Succeeded { node, attempt, outcome: None }
}

#[test]
fn a_chain_runs_one_node_after_the_other_and_succeeds() {
    let p = plan(&["a", "b"], &[("a", "b", "success")]);
    let mut s = InstanceState::new(&p);
    assert_eq!(apply(&p, &mut s, Event::Start), [Command::Dispatch { node: 0, attempt: 1 }]);
    assert_eq!(apply(&p, &mut s, ok(0, 1)), [Command::Dispatch { node: 1, attempt: 1 }]);
    assert_eq!(apply(&p, &mut s, ok(1, 1)), [Command::Finish { status: InstanceStatus::Succeeded, failed_node: None }]);
    assert_eq!(s.status, InstanceStatus::Succeeded);
}

#[test]
fn a_duplicate_or_stale_completion_changes_nothing() {
    let p = plan(&["a", "b"], &[("a", "b", "success")]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    apply(&p, &mut s, ok(0, 1));
    let before = s.clone();
    assert!(apply(&p, &mut s, ok(0, 1)).is_empty());
    assert!(apply(&p, &mut s, ok(1, 2)).is_empty(), "wrong attempt");
    assert_eq!(s, before);
}

#[test]
fn failures_retry_with_capped_exponential_backoff_then_fail_the_instance() {
    let mut p = plan(&["a"], &[]);
    p.nodes[0].retry = Some(RetryPolicy { max_attempts: 4, backoff_ms: 100, max_backoff_ms: 250 });
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    let fail = |attempt| Event::Failed { node: 0, attempt, retryable: true, timed_out: false };
    let mut delays = Vec::new();
    for attempt in 1..=3 {
        let commands = apply(&p, &mut s, fail(attempt));
        let Command::ScheduleRetry { attempt: next, delay_ms, .. } = commands[0] else { panic!("{commands:?}") };
        assert_eq!(next, attempt + 1);
        delays.push(delay_ms);
        assert_eq!(s.nodes[0].status, NodeStatus::Waiting);
        assert_eq!(
            apply(&p, &mut s, Event::RetryDue { node: 0, attempt: next }),
            [Command::Dispatch { node: 0, attempt: next }]
        );
    }
    assert_eq!(delays, [100, 200, 250]);
    let last = apply(&p, &mut s, fail(4));
    assert_eq!(last, [Command::Finish { status: InstanceStatus::Failed, failed_node: Some(0) }]);
}

#[test]
fn an_attempt_lost_with_its_process_is_retried_even_without_a_retry_policy() {
    let p = plan(&["a"], &[]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    for attempt in 1..=LOST_ATTEMPT_ALLOWANCE {
        let commands = apply(&p, &mut s, Event::Lost { node: 0, attempt });
        assert_eq!(commands, [Command::ScheduleRetry { node: 0, attempt: attempt + 1, delay_ms: 0 }]);
        apply(&p, &mut s, Event::RetryDue { node: 0, attempt: attempt + 1 });
    }
    let last = apply(&p, &mut s, Event::Lost { node: 0, attempt: LOST_ATTEMPT_ALLOWANCE + 1 });
    assert_eq!(last, [Command::Finish { status: InstanceStatus::Failed, failed_node: Some(0) }], "a poison pill stops");
}

#[test]
fn a_suspended_node_that_times_out_schedules_its_retry() {
    let mut p = plan(&["a"], &[]);
    p.nodes[0].retry = Some(RetryPolicy { max_attempts: 2, backoff_ms: 100, max_backoff_ms: 100 });
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    apply(&p, &mut s, Event::Suspended { node: 0, attempt: 1 });
    let commands = apply(&p, &mut s, Event::Failed { node: 0, attempt: 1, retryable: true, timed_out: true });
    assert_eq!(commands, [Command::ScheduleRetry { node: 0, attempt: 2, delay_ms: 100 }]);
    assert_eq!(s.nodes[0].status, NodeStatus::Waiting);
}

#[test]
fn a_handled_failure_runs_the_handler_and_skips_the_success_path() {
    let p = plan(&["a", "ok", "handler"], &[("a", "ok", "success"), ("a", "handler", "failure")]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    let commands = apply(&p, &mut s, Event::Failed { node: 0, attempt: 1, retryable: false, timed_out: false });
    let handler = p.index_of("handler").unwrap();
    assert_eq!(commands, [Command::Dispatch { node: handler, attempt: 1 }]);
    apply(&p, &mut s, ok(handler, 1));
    assert_eq!(s.status, InstanceStatus::Succeeded);
    assert_eq!(s.nodes[p.index_of("ok").unwrap()].status, NodeStatus::Skipped);
}

#[test]
fn a_branch_takes_its_outcome_skips_the_other_path_and_the_join_still_runs() {
    let p = plan(
        &["b", "yes", "no", "after_no", "join"],
        &[
            ("b", "yes", "true"),
            ("b", "no", "false"),
            ("no", "after_no", "success"),
            ("yes", "join", "success"),
            ("after_no", "join", "success"),
        ],
    );
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    apply(&p, &mut s, Event::Succeeded { node: 0, attempt: 1, outcome: Some("true".into()) });
    let yes = p.index_of("yes").unwrap();
    apply(&p, &mut s, ok(yes, 1));
    let join = p.index_of("join").unwrap();
    assert_eq!(s.nodes[join].status, NodeStatus::Running);
    apply(&p, &mut s, ok(join, 1));
    let skipped: Vec<_> =
        statuses(&p, &s).into_iter().filter(|(_, st)| *st == NodeStatus::Skipped).map(|(id, _)| id).collect();
    assert_eq!(skipped, ["no", "after_no"]);
    assert_eq!(s.status, InstanceStatus::Succeeded);
}

#[test]
fn parallelism_is_capped_and_freed_slots_are_reused() {
    let mut p = plan(&["a", "b", "c"], &[]);
    p.max_parallel = 2;
    let mut s = InstanceState::new(&p);
    assert_eq!(apply(&p, &mut s, Event::Start).len(), 2);
    assert_eq!(s.nodes[2].status, NodeStatus::Ready);
    assert_eq!(apply(&p, &mut s, ok(0, 1)), [Command::Dispatch { node: 2, attempt: 1 }]);
}

#[test]
fn cancel_and_timeout_end_every_unfinished_node() {
    let p = plan(&["a", "b"], &[("a", "b", "success")]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    let mut timed_out = s.clone();
    apply(&p, &mut s, Event::Cancel);
    assert_eq!(
        statuses(&p, &s).iter().map(|(_, st)| *st).collect::<Vec<_>>(),
        [NodeStatus::Canceled, NodeStatus::Canceled]
    );
    assert!(apply(&p, &mut s, ok(0, 1)).is_empty(), "a canceled instance ignores completions");
    apply(&p, &mut timed_out, Event::TimedOut);
    assert_eq!(timed_out.nodes[0].status, NodeStatus::TimedOut);
    assert_eq!(timed_out.nodes[1].status, NodeStatus::Canceled);
}

#[test]
fn a_retry_from_failed_keeps_succeeded_nodes_and_reruns_the_failed_branch() {
    let p = plan(&["a", "b", "c", "d"], &[("a", "b", "success"), ("b", "c", "success"), ("a", "d", "success")]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    apply(&p, &mut s, ok(0, 1));
    let (b, c, d) = (p.index_of("b").unwrap(), p.index_of("c").unwrap(), p.index_of("d").unwrap());
    apply(&p, &mut s, Event::Failed { node: b, attempt: 1, retryable: false, timed_out: false });
    assert_eq!(s.status, InstanceStatus::Failed);
    assert_eq!(retry_set(&p, &s, &RetryFrom::Failed), [b, c, d], "d was canceled when the instance failed");
    let commands = apply(&p, &mut s, Event::Retry { reset: vec![b, d], admit: true });
    assert_eq!(
        commands,
        [Command::Dispatch { node: b, attempt: 2 }, Command::Dispatch { node: d, attempt: 2 }],
        "d ran before it was canceled"
    );
    assert_eq!(s.nodes[0].status, NodeStatus::Succeeded, "a is not run again");
    assert_eq!(s.nodes[c].status, NodeStatus::Pending, "downstream of b");
    assert!(apply(&p, &mut s, Event::Retry { reset: vec![0], admit: true }).is_empty(), "not while it runs");
}

#[test]
fn a_retry_from_start_or_a_node_and_a_queued_retry() {
    let p = plan(&["a", "b"], &[("a", "b", "success")]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    apply(&p, &mut s, ok(0, 1));
    apply(&p, &mut s, ok(1, 1));
    assert!(retry_set(&p, &s, &RetryFrom::Failed).is_empty(), "nothing failed");
    assert_eq!(retry_set(&p, &s, &RetryFrom::Node(1)), [1]);
    assert_eq!(retry_set(&p, &s, &RetryFrom::Start), [0, 1]);
    assert!(apply(&p, &mut s, Event::Retry { reset: vec![0, 1], admit: false }).is_empty());
    assert_eq!(s.status, InstanceStatus::Queued);
    assert_eq!(apply(&p, &mut s, Event::Start), [Command::Dispatch { node: 0, attempt: 2 }]);
}

#[test]
fn a_paused_instance_records_results_but_dispatches_only_on_resume() {
    let p = plan(&["a", "b", "c"], &[("a", "b", "success")]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    assert!(apply(&p, &mut s, Event::Pause).is_empty());
    assert_eq!(s.status, InstanceStatus::Paused);
    assert!(apply(&p, &mut s, ok(0, 1)).is_empty(), "the result is recorded, nothing dispatched");
    assert_eq!((s.nodes[0].status, s.nodes[1].status), (NodeStatus::Succeeded, NodeStatus::Ready));
    assert!(apply(&p, &mut s, Event::Pause).is_empty(), "pausing twice changes nothing");
    apply(&p, &mut s, ok(2, 1));
    assert_eq!(s.status, InstanceStatus::Paused, "a paused instance does not finish by itself");
    assert_eq!(apply(&p, &mut s, Event::Resume), [Command::Dispatch { node: 1, attempt: 1 }]);
    assert!(apply(&p, &mut s, Event::Resume).is_empty(), "resuming a running instance changes nothing");
    assert_eq!(apply(&p, &mut s, ok(1, 1)), [Command::Finish { status: InstanceStatus::Succeeded, failed_node: None }]);
}

#[test]
fn an_instance_whose_last_node_ended_while_paused_finishes_on_resume() {
    let p = plan(&["a"], &[]);
    let mut s = InstanceState::new(&p);
    apply(&p, &mut s, Event::Start);
    apply(&p, &mut s, Event::Pause);
    apply(&p, &mut s, ok(0, 1));
    assert_eq!(
        apply(&p, &mut s, Event::Resume),
        [Command::Finish { status: InstanceStatus::Succeeded, failed_node: None }]
    );
    assert!(
        apply(&p, &mut s, Event::Pause).is_empty() && apply(&p, &mut s, Event::Resume).is_empty(),
        "not after it finished"
    );
}

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Every instance terminates; no node starts before all its predecessors finish; no
    /// node completes twice; skipped nodes never run; parallelism stays within its cap.
    #[test]
    fn random_dags_terminate_and_keep_the_scheduling_invariants(sc in scenario()) {
        let p = &sc.plan;
        let mut rng = sc.seed;
        let mut next = move |bound: usize| { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; (rng % bound as u64) as usize };
        let mut s = InstanceState::new(p);
        let mut pending: Vec<Event> = Vec::new();
        let mut delivered: Vec<Event> = Vec::new();
        let mut succeeded = vec![0u32; p.nodes.len()];
        let mut finishes = 0;
        let mut toggles = 0u32;
        let (mut retries, mut runs) = (0u32, 1u32);
        // Attempts made before the last retry: the final checks judge the last run.
        let mut base = vec![0u32; p.nodes.len()];
        let mut commands = apply(p, &mut s, Event::Start);
        for _step in 0..10_000 {
            for c in commands.drain(..) {
                match c {
                    Command::Dispatch { node, attempt } => {
                        for e in &p.incoming[node] {
                            prop_assert!(s.nodes[e.from].status.is_terminal(), "{} started before {}", node, e.from);
                        }
                        let success = sc.results[node][(attempt - 1) as usize % 4];
                        let is_branch = p.nodes[node].kind == NodeKind::Branch;
                        pending.push(if success {
                            let outcome = is_branch.then(|| if attempt % 2 == 1 { "true" } else { "false" }.to_owned());
                            Event::Succeeded { node, attempt, outcome }
                        } else {
                            Event::Failed { node, attempt, retryable: true, timed_out: false }
                        });
                    }
                    Command::ScheduleRetry { node, attempt, .. } => pending.push(Event::RetryDue { node, attempt }),
                    Command::Finish { .. } => finishes += 1,
                }
            }
            prop_assert!(s.running() <= p.max_parallel);
            // An operator pauses and resumes at random; a paused instance with nothing left
            // in flight is resumed, as an operator eventually would.
            let toggle = (pending.is_empty() && s.status == InstanceStatus::Paused) || next(6) == 0;
            if toggle && !s.status.is_terminal() {
                let event = if s.status == InstanceStatus::Paused { Event::Resume } else { Event::Pause };
                commands = apply(p, &mut s, event);
                toggles += 1;
                continue;
            }
            // A finished run is now and then retried, from a random point.
            if pending.is_empty() && s.status.is_terminal() && retries < 2 && next(2) == 0 {
                retries += 1;
                let from = match next(3) {
                    0 => RetryFrom::Failed,
                    1 => RetryFrom::Start,
                    _ => RetryFrom::Node(next(p.nodes.len())),
                };
                let reset = retry_set(p, &s, &from);
                let before = s.clone();
                commands = apply(p, &mut s, Event::Retry { reset: reset.clone(), admit: next(2) == 0 });
                if reset.is_empty() {
                    prop_assert_eq!(&s, &before, "a retry with nothing to re-run changes nothing");
                    continue;
                }
                runs += 1;
                base = before.nodes.iter().map(|n| n.attempts).collect();
                for (i, (old, new)) in before.nodes.iter().zip(&s.nodes).enumerate() {
                    prop_assert!(new.attempts >= old.attempts, "attempt numbers never go back");
                    if reset.contains(&i) {
                        succeeded[i] = 0;
                    } else {
                        prop_assert_eq!(old, new, "a node outside the retry keeps its result");
                    }
                    if from == RetryFrom::Failed && old.status == NodeStatus::Succeeded {
                        prop_assert!(!reset.contains(&i) || p.incoming[i].iter().any(|e| reset.contains(&e.from)));
                    }
                }
                if s.status == InstanceStatus::Queued {
                    prop_assert!(commands.is_empty());
                    commands = apply(p, &mut s, Event::Start);
                }
                continue;
            }
            if pending.is_empty() {
                break;
            }
            // Deliver a random pending event, or now and then re-deliver an old one.
            let event = if !delivered.is_empty() && next(5) == 0 {
                delivered[next(delivered.len())].clone()
            } else {
                pending.swap_remove(next(pending.len()))
            };
            let before: Vec<NodeStatus> = s.nodes.iter().map(|n| n.status).collect();
            let was_paused = s.status == InstanceStatus::Paused;
            commands = apply(p, &mut s, event.clone());
            if was_paused {
                prop_assert!(!commands.iter().any(|c| matches!(c, Command::Dispatch { .. })), "dispatched while paused");
                prop_assert!(s.status != InstanceStatus::Running && s.status != InstanceStatus::Succeeded, "only Resume leaves a pause alive");
            }
            for (i, n) in s.nodes.iter().enumerate() {
                if n.status == NodeStatus::Succeeded && before[i] != NodeStatus::Succeeded {
                    succeeded[i] += 1;
                }
            }
            delivered.push(event);
        }
        prop_assert!(pending.is_empty(), "did not terminate (after {} pauses and resumes)", toggles);
        prop_assert!(s.status.is_terminal(), "instance ended {:?}", s.status);
        prop_assert!(s.nodes.iter().all(|n| n.status.is_terminal()));
        prop_assert_eq!(finishes, runs, "one finish per run");
        prop_assert!(succeeded.iter().all(|&c| c <= 1), "a node completed twice");
        for (i, n) in s.nodes.iter().enumerate() {
            let ran = n.attempts > base[i];
            if n.status == NodeStatus::Skipped {
                prop_assert!(!ran, "a skipped node ran");
            }
            // Whatever ran or was skipped agrees with the edge rules, judged on the final states.
            if n.status == NodeStatus::Skipped || ran {
                prop_assert_eq!(should_run(p, &s, i), ran, "node {} {:?}", i, n.status);
            }
        }
    }
}
