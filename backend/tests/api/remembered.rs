//! Transitions written from remembered snapshots (`store/snapshots.rs`): a process that wrote
//! an instance writes its next transition without locking and reading it, guarded by the
//! instance's `rev`; once another writer has changed the instance, the guard refuses and the
//! transition is written the locked way, from what the database holds.

use crate::common::{both_backends, node, Backend, TestApp};
use crate::crash::{check_history, count_in};
use serde_json::{json, Value};
use trellis_model::{InstanceStatus, NodeStatus};

/// `trellis_engine_remembered_batches` by outcome (`written`, `refused`).
async fn remembered(app: &TestApp, outcome: &str) -> f64 {
    let text = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    let line = format!("trellis_engine_remembered_batches{{outcome=\"{outcome}\"}} ");
    let value = text.lines().find_map(|l| l.strip_prefix(line.as_str()));
    value.unwrap_or_else(|| panic!("{line} in {text}")).trim().parse().unwrap()
}

async fn history(app: &TestApp, id: &str) -> (Value, Vec<Value>) {
    let instance = app.instance_json(id).await;
    let page: Value =
        app.get(&format!("/api/v1/instances/{id}/history?limit=1000")).send().await.unwrap().json().await.unwrap();
    let entries = page["items"].as_array().or(page.as_array()).cloned().unwrap_or_default();
    (instance, entries)
}

fn backend_of(app: &TestApp) -> Backend {
    if app.database_url.starts_with("sqlite:") {
        Backend::Sqlite
    } else {
        Backend::Postgres
    }
}

async fn a_chain_is_written_from_remembered_snapshots(app: TestApp) {
    // Nodes that do not run ahead of their dispatch's commit (`engine/ahead.rs`): each step
    // is a batch of its own, as a chain of calls out is.
    let step = |i: usize| json!({"id": format!("n{i}"), "type": "fail", "config": {"fail_attempts": 0}});
    let nodes: Vec<Value> = (0..10).map(step).collect();
    let edges: Vec<Value> = (1..10).map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")})).collect();
    let workflow = app.publish(json!({"nodes": nodes, "edges": edges})).await;
    let id = app.start(&workflow, json!({})).await;
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
    let (instance, entries) = history(&app, &id).await;
    check_history(&instance, &entries);
    // The first transition locks (nothing is remembered of a new instance); most after it not.
    assert!(remembered(&app, "written").await >= 5.0, "most steps written from the remembered snapshot");
    assert_eq!(remembered(&app, "refused").await, 0.0, "nobody else wrote the instance");
}

async fn a_write_by_another_writer_is_seen_before_the_next_transition(app: TestApp) {
    let workflow = app.publish(crate::common::gated()).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_for(&id, |i| node(i, "gate").status == NodeStatus::Waiting).await;
    // What another process's transition of the instance does to it, as far as `rev` tells.
    let rev = count_in(backend_of(&app), &app.database_url, "UPDATE instances SET rev = rev + 1 RETURNING rev").await;
    assert!(rev >= 2, "the start and the first transition counted: {rev}");
    let signaled = app.signal(&id, json!({"node": "gate", "payload": {"by": "ada"}})).await;
    assert_eq!(signaled.status(), 200);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    assert_eq!(node(&done, "gate").output, Some(json!({"by": "ada"})));
    let (instance, entries) = history(&app, &id).await;
    let seqs: Vec<i64> = entries.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=entries.len() as i64).collect::<Vec<_>>(), "gap-free history: {instance}");
    assert!(remembered(&app, "refused").await >= 1.0, "the signal's remembered write was refused");
}

both_backends!(
    a_chain_is_written_from_remembered_snapshots,
    a_write_by_another_writer_is_seen_before_the_next_transition
);
