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

/// `trellis_snapshots` and `trellis_snapshot_bytes`: the instances remembered, their bytes.
async fn held(app: &TestApp) -> (f64, f64) {
    let text = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    let sample = |name: &str| -> f64 {
        let line = format!("{name} ");
        let value = text.lines().find_map(|l| l.strip_prefix(line.as_str()));
        value.unwrap_or_else(|| panic!("{line} in {text}")).trim().parse().unwrap()
    };
    (sample("trellis_snapshots"), sample("trellis_snapshot_bytes"))
}

/// What `held` reads once it shows `count` instances; a transition's commit is seen by a
/// reader a moment before the snapshot it leaves is remembered or forgotten.
async fn held_when(app: &TestApp, count: f64) -> (f64, f64) {
    for _ in 0..500 {
        let held = held(app).await;
        if held.0 == count {
            return held;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("never {count} remembered: {:?}", held(app).await)
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

async fn an_instance_is_remembered_only_until_it_ends(app: TestApp) {
    let succeeds = app.publish(crate::common::gated()).await;
    let fails = app
        .publish(json!({
            "nodes": [{"id": "gate", "type": "wait_signal"}, {"id": "boom", "type": "fail"}],
            "edges": [{"from": "gate", "to": "boom"}]
        }))
        .await;
    let input = json!({"input": {"pad": "x".repeat(200)}});
    let ids = [app.start(&succeeds, input.clone()).await, app.start(&fails, input).await];
    for id in &ids {
        app.wait_for(id, |i| node(i, "gate").status == NodeStatus::Waiting).await;
    }
    // Both will transition again (at their signal): remembered, each at what it takes in
    // memory — more than its JSON (two nodes' rows, the input's map and text, bookkeeping).
    let (count, bytes) = held_when(&app, 2.0).await;
    assert_eq!(count, 2.0);
    assert!(bytes > 2.0 * 2_000.0, "{bytes} bytes for two instances");
    for id in &ids {
        assert_eq!(app.signal(id, json!({"node": "gate", "payload": {}})).await.status(), 200);
    }
    assert_eq!(app.wait_finished(&ids[0]).await.summary.status, InstanceStatus::Succeeded);
    assert_eq!(app.wait_finished(&ids[1]).await.summary.status, InstanceStatus::Failed);
    // Nothing transitions an ended instance again (a retry reads it afresh): none is kept.
    assert_eq!(held_when(&app, 0.0).await, (0.0, 0.0), "ended instances forgotten");
}

both_backends!(
    a_chain_is_written_from_remembered_snapshots,
    a_write_by_another_writer_is_seen_before_the_next_transition,
    an_instance_is_remembered_only_until_it_ends
);
