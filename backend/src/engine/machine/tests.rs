use super::*;
use trellis_model::{Definition, Edge, Node, RetryPolicy};

mod random;

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
