use super::*;
use crate::store::{NodeAttempt, WorkKind};
use chrono::Utc;

/// A `kind` item for attempt 1 of `node`, due now.
fn item(kind: fn(NodeAttempt) -> Work, node: &str) -> NewWork {
    NewWork::due(kind(NodeAttempt::new(node, 1)), Utc::now())
}

fn ids() -> (Uuid, Uuid) {
    (Uuid::now_v7(), Uuid::now_v7())
}

#[test]
fn an_ended_attempt_drops_the_work_an_earlier_step_added_for_it_but_not_its_retry() {
    let (instance, workflow) = ids();
    let mut batch = BatchWrites::default();
    let mut first = Writes::default();
    first.new_work.push(item(Work::NodeTimeout, "a"));
    first.new_work.push(item(Work::Retry, "a"));
    first.new_work.push(item(Work::Run, "b"));
    batch.add(instance, workflow, &first);
    let ended = Writes { ended_attempts: vec![("a".into(), 1)], ..Writes::default() };
    batch.add(instance, workflow, &ended);
    let kinds: Vec<_> =
        batch.work.iter().map(|(_, _, w)| (w.work.kind(), w.work.attempt().map(|at| at.node.as_str()))).collect();
    assert_eq!(kinds, vec![(WorkKind::Retry, Some("a")), (WorkKind::Run, Some("b"))]);
    assert_eq!(batch.ended, vec![(instance, "a".to_owned(), 1)]);
}

#[test]
fn clearing_an_instance_drops_only_its_own_earlier_work_and_keeps_later_work() {
    let (instance, workflow) = ids();
    let other = Uuid::now_v7();
    let mut batch = BatchWrites::default();
    let adds = |node: &str| Writes { new_work: vec![item(Work::Run, node)], ..Writes::default() };
    batch.add(instance, workflow, &adds("a"));
    batch.add(other, workflow, &adds("x"));
    batch.add(instance, workflow, &Writes { clear_work: true, ..Writes::default() });
    batch.add(instance, workflow, &adds("c"));
    let left: Vec<_> = batch.work.iter().map(|(i, _, w)| (*i, w.work.attempt().unwrap().node.clone())).collect();
    assert_eq!(left, vec![(other, "x".to_owned()), (instance, "c".to_owned())]);
}

#[test]
fn a_node_written_twice_is_written_once_with_its_last_row_and_entries_keep_step_order() {
    let (instance, workflow) = ids();
    let mut batch = BatchWrites::default();
    let row = |status| NodeRow::fresh("a".into(), 0, status);
    let entry = |n: i64| NewEvent {
        kind: trellis_model::trace::EventKind::Node,
        at: Utc::now(),
        data: serde_json::json!({ "n": n }),
    };
    let first =
        Writes { nodes: vec![row(trellis_model::NodeStatus::Running)], events: vec![entry(1)], ..Writes::default() };
    let second = Writes {
        nodes: vec![row(trellis_model::NodeStatus::Succeeded)],
        events: vec![entry(2), entry(3)],
        ..Writes::default()
    };
    assert_eq!(batch.add(instance, workflow, &first), 0);
    assert_eq!(batch.add(instance, workflow, &second), 1);
    assert_eq!(batch.nodes.len(), 1);
    assert_eq!(batch.nodes[0].1.status, trellis_model::NodeStatus::Succeeded);
    let numbers: Vec<_> = batch.events[0].2.iter().map(|e| e.data["n"].as_i64().unwrap()).collect();
    assert_eq!(numbers, vec![1, 2, 3]);
}

#[test]
fn steps_are_grouped_by_instance_in_id_order_keeping_each_instances_order() {
    let (low, high) = ids();
    let steps = [
        Step { instance: high, fence: None, ahead: None },
        Step { instance: low, fence: None, ahead: None },
        Step { instance: high, fence: None, ahead: None },
    ];
    assert_eq!(by_instance(&steps), vec![(low, vec![1]), (high, vec![0, 2])]);
}

/// A running instance at `rev` with nodes `a` (running) and `b` (pending).
fn running(rev: i64) -> Snapshot {
    let instance = super::super::InstanceRow {
        rev,
        input: sqlx::types::Json(serde_json::json!({})),
        ..super::super::InstanceRow::for_test(trellis_model::InstanceStatus::Running)
    };
    let nodes = vec![
        NodeRow { attempts: 1, ..NodeRow::fresh("a".into(), 0, trellis_model::NodeStatus::Running) },
        NodeRow::fresh("b".into(), 1, trellis_model::NodeStatus::Pending),
    ]
    .into_iter()
    .map(std::sync::Arc::new)
    .collect();
    Snapshot { instance, nodes }
}

/// Step 0 ends `a` and dispatches `b` (unless `dispatch` is false); step 1 ends `b`, run ahead
/// as seen at `seen_rev`. Returns what was decided.
fn decide_ahead(rev: i64, seen_rev: i64, dispatch: bool) -> Decided {
    let snapshot = running(rev);
    let id = snapshot.instance.id;
    let fence = Fence { work_id: Uuid::now_v7(), owner: "me".into(), epoch: 1 };
    let ahead = Ahead { node: "b".into(), attempt: 1, rev: seen_rev };
    let steps = [
        Step { instance: id, fence: Some(&fence), ahead: None },
        Step { instance: id, fence: None, ahead: Some(&ahead) },
    ];
    let decide = |i: usize, _: &Snapshot| {
        let row =
            |node: &str, position, status| NodeRow { attempts: 1, ..NodeRow::fresh(node.into(), position, status) };
        match i {
            0 => Writes {
                nodes: vec![row("a", 0, trellis_model::NodeStatus::Succeeded)],
                new_work: if dispatch { vec![item(Work::Run, "b")] } else { vec![] },
                ..Writes::default()
            },
            _ => Writes { nodes: vec![row("b", 1, trellis_model::NodeStatus::Succeeded)], ..Writes::default() },
        }
    };
    let mut snapshots = HashMap::from([(id, snapshot)]);
    Decided::steps(&steps, &by_instance(&steps), &mut snapshots, |_| false, &decide)
}

fn runs_of_b(writes: &[NewWork]) -> usize {
    writes.iter().filter(|w| w.work.runs("b", 1)).count()
}

#[test]
fn an_attempt_run_ahead_of_its_dispatch_ends_in_the_same_batch_and_its_work_is_never_written() {
    let d = decide_ahead(3, 3, true);
    assert!(matches!(d.outcomes[1], TransitionOutcome::NotFound), "applied (filled in once written)");
    assert!(d.applied[1].is_some());
    assert_eq!(runs_of_b(&d.batch.work.iter().map(|(_, _, w)| w.clone()).collect::<Vec<_>>()), 0);
    let first = &d.applied[0].as_ref().expect("the dispatch applied").0;
    assert_eq!(runs_of_b(&first.new_work), 0, "not launched again after the commit");
    assert_eq!(
        d.batch.nodes.iter().find(|(_, n)| n.node_id == "b").unwrap().1.status,
        trellis_model::NodeStatus::Succeeded
    );
}

#[test]
fn an_attempt_run_ahead_on_an_instance_written_since_or_not_dispatched_is_dropped() {
    for d in [decide_ahead(4, 3, true), decide_ahead(3, 3, false)] {
        assert!(matches!(d.outcomes[1], TransitionOutcome::Fenced));
        assert!(d.applied[1].is_none());
        let first = &d.applied[0].as_ref().expect("the first step applied").0;
        let dispatched = runs_of_b(&first.new_work);
        assert_eq!(runs_of_b(&d.batch.work.iter().map(|(_, _, w)| w.clone()).collect::<Vec<_>>()), dispatched);
    }
}

#[test]
fn an_attempt_run_ahead_is_dropped_when_another_step_of_its_instance_applied_before_its_chain() {
    let snapshot = running(3);
    let id = snapshot.instance.id;
    let ahead = Ahead { node: "b".into(), attempt: 1, rev: 3 };
    let steps = [
        Step { instance: id, fence: None, ahead: None },
        Step { instance: id, fence: None, ahead: None },
        Step { instance: id, fence: None, ahead: Some(&ahead) },
    ];
    let decide = |i: usize, _: &Snapshot| {
        let mut writes = Writes {
            nodes: vec![NodeRow { attempts: 1, ..NodeRow::fresh("a".into(), 0, trellis_model::NodeStatus::Running) }],
            ..Writes::default()
        };
        if i == 1 {
            writes.new_work.push(item(Work::Run, "b"));
        }
        writes
    };
    let mut snapshots = HashMap::from([(id, snapshot)]);
    let d = Decided::steps(&steps, &by_instance(&steps), &mut snapshots, |_| false, &decide);
    assert!(matches!(d.outcomes[2], TransitionOutcome::Fenced));
    assert_eq!(runs_of_b(&d.applied[1].as_ref().unwrap().0.new_work), 1, "b runs as usual");
}

#[test]
fn work_a_later_step_clears_is_not_launched_by_the_step_that_dispatched_it() {
    let snapshot = running(0);
    let id = snapshot.instance.id;
    let steps = [Step { instance: id, fence: None, ahead: None }, Step { instance: id, fence: None, ahead: None }];
    let decide = |i: usize, _: &Snapshot| match i {
        0 => {
            let mut leased = item(Work::Run, "b");
            (leased.id, leased.lease) = (Some(Uuid::now_v7()), Some(("me".into(), Utc::now())));
            Writes { new_work: vec![leased], ..Writes::default() }
        }
        _ => Writes { clear_work: true, ..Writes::default() },
    };
    let mut snapshots = HashMap::from([(id, snapshot)]);
    let d = Decided::steps(&steps, &by_instance(&steps), &mut snapshots, |_| false, &decide);
    assert!(d.batch.work.is_empty());
    assert_eq!(runs_of_b(&d.applied[0].as_ref().unwrap().0.new_work), 0, "never launched");
}
