//! The wake a finishing child writes, what it brings its parent, when children are canceled,
//! and (against a real SQLite store) that a redone attempt finds the child it started.

use super::*;
use crate::engine::effects::decide;
use crate::engine::plan::Plan;
use crate::engine::Engine;
use crate::store::{InstanceRow, NodeAttempt, NodeRow, Snapshot, Work};
use chrono::Utc;
use serde_json::json;
use sqlx::types::Json;
use trellis_model::{Definition, Node};

fn plan(kind: &str) -> Plan {
    let mut node = Node::new("n", kind);
    if kind == "subworkflow" {
        node.config = json!({"workflow": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"});
    }
    Plan::new(&Definition { nodes: vec![node], ..Default::default() }).unwrap()
}

/// A running instance whose one node runs attempt 1; a child of `parent` if given.
fn running(parent: Option<Uuid>) -> Snapshot {
    let instance = InstanceRow {
        input: Json(json!({})),
        parent_instance_id: parent,
        parent_node_id: parent.map(|_| "call".to_owned()),
        parent_attempt: parent.map(|_| 2),
        depth: i32::from(parent.is_some()),
        ..InstanceRow::for_test(InstanceStatus::Running)
    };
    let node = NodeRow { attempts: 1, ..NodeRow::fresh("n".into(), 0, NodeStatus::Running) };
    Snapshot { instance, nodes: vec![std::sync::Arc::new(node)] }
}

#[test]
fn a_child_that_ends_wakes_the_parents_attempt_in_the_same_writes() {
    let parent = Uuid::now_v7();
    let child = running(Some(parent));
    let failed = Detail { error: Some("boom".into()), ..Default::default() };
    let event = Event::Failed { node: 0, attempt: 1, retryable: false, timed_out: false };
    let writes = decide(&plan("noop"), &child, event, &failed, Utc::now(), 0.0);
    let (to, wake) = writes.wake.expect("the parent is woken");
    assert_eq!(to, parent);
    let Work::ChildDone { attempt, end } = wake.work else { panic!("{:?}", wake.work) };
    assert_eq!(attempt, NodeAttempt::new("call", 2));
    let (event, detail) = child_outcome(4, 2, &end);
    assert_eq!(event, Event::Failed { node: 4, attempt: 2, retryable: true, timed_out: false });
    let error = detail.error.unwrap();
    assert_eq!(error, format!("child instance {} failed: node `n` failed: boom", child.instance.id));
}

#[test]
fn a_succeeded_child_hands_its_output_and_a_top_level_instance_wakes_nobody() {
    let parent = Uuid::now_v7();
    let ok = Event::Succeeded { node: 0, attempt: 1, outcome: None };
    let output = Detail { output: Some(json!({"x": 1})), ..Default::default() };
    let writes = decide(&plan("noop"), &running(Some(parent)), ok.clone(), &output, Utc::now(), 0.0);
    let (_, wake) = writes.wake.unwrap();
    let Work::ChildDone { end, .. } = wake.work else { panic!("{:?}", wake.work) };
    let (event, detail) = child_outcome(0, 2, &end);
    assert_eq!(event, Event::Succeeded { node: 0, attempt: 2, outcome: None });
    assert_eq!(detail.output, Some(json!({"n": {"x": 1}})));
    assert!(decide(&plan("noop"), &running(None), ok, &output, Utc::now(), 0.0).wake.is_none());
}

#[test]
fn ending_badly_or_losing_a_subworkflow_attempt_cancels_children_but_succeeding_does_not() {
    let cancels = |kind: &str, event: Event| {
        let writes = decide(&plan(kind), &running(None), event, &Detail::default(), Utc::now(), 0.0);
        writes.new_work.iter().any(|w| w.work == Work::CancelChildren)
    };
    assert!(cancels("subworkflow", Event::Cancel));
    assert!(cancels("subworkflow", Event::Lost { node: 0, attempt: 1 }));
    assert!(cancels("subworkflow", Event::Failed { node: 0, attempt: 1, retryable: true, timed_out: true }));
    assert!(!cancels("subworkflow", Event::Succeeded { node: 0, attempt: 1, outcome: None }));
    assert!(!cancels("noop", Event::Cancel), "no subworkflow node, no children");
}

/// Publishes `definition` as a new workflow's version 1; returns its id.
async fn publish(store: &crate::store::DynStore, name: &str, definition: serde_json::Value) -> Uuid {
    use crate::store::{NewVersion, NewWorkflow};
    let draft: Definition = serde_json::from_value(definition).unwrap();
    let new = NewWorkflow { id: Uuid::now_v7(), name: name.into(), description: None, draft, now: Utc::now() };
    let record = store.create_workflow(&new).await.unwrap();
    let version = NewVersion { note: None, published_by: "test".into(), now: Utc::now(), stuck_after: vec![] };
    store.publish(record.id, record.draft_rev, &version).await.unwrap();
    record.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redone_attempt_finds_the_child_it_started_and_a_new_attempt_starts_another() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("redo.db").display());
    let config = crate::config::DatabaseConfig::direct(&url, 4);
    let store = crate::store::connect(&config).await.unwrap();
    let child = publish(&store, "gate", json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})).await;
    let call = json!({"nodes": [{"id": "call", "type": "subworkflow", "config": {"workflow": child.to_string()}}]});
    let parent_workflow = publish(&store, "caller", call).await;
    let engine = Engine::new(
        store.clone(),
        super::super::EngineConfig {
            workers: 4,
            lease_ms: 30_000,
            http_allow: crate::http_client::OutboundPolicy::parse("").unwrap(),
            max_input_bytes: 1 << 20,
            output_caps: super::super::outputs::OutputCaps { node_bytes: 1 << 20, instance_bytes: 1 << 22 },
            commit_lanes: 1,
            map_max_items: 100,
            public_url: None,
            hold: crate::cluster::Hold::default(),
        },
        // No node here evaluates an expression: the sandbox never starts a worker.
        crate::sandbox::Sandbox::new(
            crate::sandbox::SandboxSettings::from_config(&crate::config::ServeConfig::local()).unwrap(),
        ),
        crate::secrets::Vault::open(store.clone(), &config).await.unwrap(),
    );
    // The start runs the node's first attempt at once, in this process: it starts the child.
    let parent = engine.start(StartRequest::new(parent_workflow, json!({"n": 1}))).await.unwrap().id;
    let mut children = Vec::new();
    for _ in 0..500 {
        children = store.children(parent).await.unwrap();
        if !children.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(children.len(), 1, "the first attempt started its child");
    let first = children[0].id;
    let redactor = crate::secrets::Redactor::default();
    let attempt = |attempt: u32| ChildStart {
        parent,
        node: "call",
        attempt,
        traceparent: None,
        workflow: child,
        version: VersionRef::Latest,
        input: json!({"n": 1}),
        item: None,
        redactor: &redactor,
    };

    // Attempt 1 again, as after a lost commit: it waits on the same child.
    assert!(matches!(engine.runner.start_child(attempt(1)).await, NodeResult::Suspend(Suspend::Child { .. })));
    assert_eq!(store.children(parent).await.unwrap().len(), 1);
    // Two redos racing past the lookup meet at the start's idempotency key.
    let key = format!("subworkflow:{parent}:call:1");
    let raced = StartRequest { version: Some(1), ..StartRequest::new(child, json!({"n": 1})) }.idempotency_key(key);
    assert_eq!(engine.start(raced).await.unwrap().id, first);
    assert_eq!(store.children(parent).await.unwrap().len(), 1);

    // Another attempt (a retry) starts a child of its own, recorded with its attempt.
    assert!(matches!(engine.runner.start_child(attempt(2)).await, NodeResult::Suspend(Suspend::Child { .. })));
    let children = store.children(parent).await.unwrap();
    let attempts: Vec<_> = children.iter().map(|c| (c.parent_node_id.as_deref(), c.parent_attempt)).collect();
    assert_eq!(attempts, [(Some("call"), Some(1)), (Some("call"), Some(2))]);
}
