//! Attempts run ahead of their dispatch's commit (`engine/ahead.rs`): the nodes that only
//! compute (no-op, transform, branch, script) run as soon as their predecessor's result is
//! known and are committed with it, while every step is still recorded; a call out is never
//! run ahead, and a slow computation is not waited for.

use crate::common::{both_backends, node, TestApp};
use crate::crash::check_history;
use crate::ledger;
use crate::traces::history;
use serde_json::{json, Value};
use trellis_model::api::InstanceDetail;
use trellis_model::{InstanceStatus, NodeStatus};

/// A metric's value by its whole label text (`name{outcome="kept"}`), or 0 if absent.
async fn metric(app: &TestApp, series: &str) -> f64 {
    let text = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    let prefix = format!("{series} ");
    text.lines().find_map(|l| l.strip_prefix(prefix.as_str())).map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Each edge's successor started no earlier than its predecessor ended, as recorded.
fn check_order(done: &InstanceDetail, edges: &[(&str, &str)]) {
    for (from, to) in edges {
        let (ended, started) = (node(done, from).ended_at.unwrap(), node(done, to).started_at.unwrap());
        assert!(started >= ended, "{to} started at {started}, before {from} ended at {ended}");
    }
}

async fn a_chain_of_computing_nodes_is_committed_together_and_every_step_recorded(app: TestApp) {
    let wf = app
        .publish(json!({
            "nodes": [
                {"id": "first", "type": "noop"},
                {"id": "double", "type": "transform", "config": {"expression": "{'n': input.n * 2}"}},
                {"id": "check", "type": "branch", "config": {"condition": "'big' if nodes.double.output.n > 10 else 'small'", "outcomes": ["big", "small"]}},
                {"id": "big", "type": "script", "config": {"source": "return {n: nodes.double.output.n + 1};"}},
                {"id": "small", "type": "noop"},
                {"id": "last", "type": "noop"}
            ],
            "edges": [{"from": "first", "to": "double"}, {"from": "double", "to": "check"},
                      {"from": "check", "to": "big", "when": "big"}, {"from": "check", "to": "small", "when": "small"},
                      {"from": "big", "to": "last"}, {"from": "small", "to": "last"}]
        }))
        .await;
    let kept_before = metric(&app, "trellis_engine_ran_ahead{outcome=\"kept\"}").await;
    let id = app.start(&wf, json!({"input": {"n": 20}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "double").output, Some(json!({"n": 40})));
    assert_eq!(node(&done, "big").output, Some(json!({"n": 41})));
    assert_eq!(node(&done, "small").status, NodeStatus::Skipped);
    for name in ["first", "double", "check", "big", "last"] {
        assert_eq!(node(&done, name).attempts, 1, "{name} ran once");
    }
    check_order(&done, &[("first", "double"), ("double", "check"), ("check", "big"), ("big", "last")]);
    let mut instance = app.instance_json(&id).await;
    // `check_history` wants every node succeeded: the skipped one is checked above.
    instance["nodes"].as_array_mut().unwrap().retain(|n| n["id"] != "small");
    check_history(&instance, &history(&app, &id).await);
    let kept = metric(&app, "trellis_engine_ran_ahead{outcome=\"kept\"}").await - kept_before;
    assert!(kept >= 1.0, "results run ahead were committed with their dispatch: {kept}");
}

async fn a_long_chain_takes_fewer_commits_than_steps(app: TestApp) {
    let nodes: Vec<Value> = (0..30).map(|i| json!({"id": format!("n{i}"), "type": "noop"})).collect();
    let edges: Vec<Value> = (1..30).map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")})).collect();
    let wf = app.publish(json!({"nodes": nodes, "edges": edges})).await;
    let batches_before = metric(&app, "trellis_commit_batches").await;
    let id = app.start(&wf, json!({})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    let pairs: Vec<(String, String)> = (1..30).map(|i| (format!("n{}", i - 1), format!("n{i}"))).collect();
    let edges: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    check_order(&done, &edges);
    check_history(&app.instance_json(&id).await, &history(&app, &id).await);
    let batches = metric(&app, "trellis_commit_batches").await - batches_before;
    assert!(batches < 15.0, "30 steps in {batches} batches");
}

async fn a_call_out_is_never_run_ahead(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    let wf = app
        .publish(json!({
            "nodes": [
                {"id": "before", "type": "noop"},
                {"id": "call", "type": "http", "config": {"url": format!("http://{addr}/hook")}},
                {"id": "after", "type": "transform", "config": {"expression": "nodes.call.output.status"}}
            ],
            "edges": [{"from": "before", "to": "call"}, {"from": "call", "to": "after"}]
        }))
        .await;
    for _ in 0..5 {
        let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
        assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
        assert_eq!(node(&done, "after").output, Some(json!(200)));
        check_order(&done, &[("before", "call"), ("call", "after")]);
    }
    assert_eq!(ledger.calls.lock().unwrap().len(), 5, "one call per instance");
}

async fn a_slow_computation_is_not_waited_for_and_runs_as_usual(app: TestApp) {
    let slow = "let x = 0; for (let i = 0; i < 2000000; i++) { x += i % 7; } return {late: x > 0};";
    let wf = app
        .publish(json!({
            "nodes": [
                {"id": "first", "type": "noop"},
                {"id": "slow", "type": "script", "config": {"source": slow}},
                {"id": "last", "type": "noop"}
            ],
            "edges": [{"from": "first", "to": "slow"}, {"from": "slow", "to": "last"}]
        }))
        .await;
    let id = app.start(&wf, json!({})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "slow").output, Some(json!({"late": true})));
    assert_eq!(node(&done, "slow").attempts, 1, "the dropped run ahead is not an attempt of its own");
    let ran = node(&done, "slow").ended_at.unwrap() - node(&done, "slow").started_at.unwrap();
    assert!(ran.num_milliseconds() >= 5, "longer than a run ahead is waited for: {ran}");
    check_order(&done, &[("first", "slow"), ("slow", "last")]);
    check_history(&app.instance_json(&id).await, &history(&app, &id).await);
}

both_backends!(
    a_chain_of_computing_nodes_is_committed_together_and_every_step_recorded,
    a_long_chain_takes_fewer_commits_than_steps,
    a_call_out_is_never_run_ahead,
    a_slow_computation_is_not_waited_for_and_runs_as_usual
);
