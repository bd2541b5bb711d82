use super::*;
use serde_json::json;

fn round_trip(work: Work) -> Result<Work, String> {
    let c = work.columns();
    Work::read(c.kind.as_str(), c.node_id.map(str::to_owned), c.attempt, c.queue.map(str::to_owned), c.payload)
}

#[test]
fn every_kind_reads_back_as_written() {
    let at = NodeAttempt::new("fetch", 3);
    let end = RunEnd {
        run: 2,
        status: InstanceStatus::Failed,
        error: Some("boom".into()),
        failed_node: Some("fetch".into()),
        error_class: Some("HTTP 5xx".into()),
    };
    let child = ChildEnd {
        child: Uuid::now_v7(),
        status: InstanceStatus::Succeeded,
        output: Some(json!({"v": 1})),
        error: None,
    };
    let all = [
        Work::Run(at.clone()),
        Work::Resume(at.clone()),
        Work::Retry(at.clone()),
        Work::NodeTimeout(at.clone()),
        Work::InstanceTimeout,
        Work::Task { attempt: at.clone(), queue: "q".into(), input: json!({"x": 1}) },
        Work::ChildDone { attempt: at.clone(), end: child },
        Work::CancelChildren,
        Work::OnFailure(RunEnd { error_class: None, ..end.clone() }),
        Work::Alert(end),
    ];
    assert_eq!(all.iter().map(Work::kind).collect::<Vec<_>>(), WorkKind::ALL);
    for work in all {
        assert_eq!(round_trip(work.clone()), Ok(work));
    }
}

#[test]
fn a_row_that_does_not_read_says_why_rather_than_defaulting() {
    let unknown = Work::read("approve", None, None, None, None).unwrap_err();
    assert!(unknown.contains("unknown kind `approve`"), "{unknown}");
    let no_node = Work::read("run", None, Some(1), None, None).unwrap_err();
    assert!(no_node.contains("`run` item names no node attempt"), "{no_node}");
    let no_end = Work::read("on_failure", None, None, None, None).unwrap_err();
    assert!(no_end.contains("carries no run's end"), "{no_end}");
    let bad_end = Work::read("alert", None, None, None, Some(json!({"run": 1}))).unwrap_err();
    assert!(bad_end.contains("payload does not read") && bad_end.contains("status"), "{bad_end}");
    let no_queue = Work::read("task", Some("n".into()), Some(1), None, None).unwrap_err();
    assert!(no_queue.contains("names no queue"), "{no_queue}");
}

#[test]
fn a_failure_handlers_end_from_an_older_build_reads_without_an_error_class() {
    let stored = json!({"run": 1, "status": "failed", "error": "x", "failed_node": null});
    let read = Work::read("on_failure", None, None, None, Some(stored)).unwrap();
    let Work::OnFailure(end) = read else { panic!("{read:?}") };
    assert_eq!((end.run, end.error_class), (1, None));
}

#[test]
fn payloads_the_previous_build_wrote_read_back() {
    let child = Uuid::now_v7();
    let old = json!({"child": child, "status": "failed", "output": null, "error": "boom"});
    let read = Work::read("child_done", Some("call".into()), Some(2), None, Some(old)).unwrap();
    let Work::ChildDone { attempt, end } = read else { panic!("{read:?}") };
    assert_eq!(
        (attempt, end.child, end.status, end.output, end.error.as_deref()),
        (NodeAttempt::new("call", 2), child, InstanceStatus::Failed, None, Some("boom"))
    );
    let old = json!({"run": 3, "status": "timed_out", "error": null, "failed_node": null, "error_class": null});
    let read = Work::read("alert", None, None, None, Some(old)).unwrap();
    assert_eq!(
        read,
        Work::Alert(RunEnd {
            run: 3,
            status: InstanceStatus::TimedOut,
            error: None,
            failed_node: None,
            error_class: None
        })
    );
    let read = Work::read("task", Some("t".into()), Some(1), Some("q".into()), Some(json!({"a": 1}))).unwrap();
    assert_eq!(read, Work::Task { attempt: NodeAttempt::new("t", 1), queue: "q".into(), input: json!({"a": 1}) });
}
