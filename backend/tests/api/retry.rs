//! Retrying a finished instance as the same instance: from its failures, from the start,
//! from a node; what does not apply; its history; its concurrency slot.

use crate::common::{both_backends, node, problem, TestApp};
use crate::traces::history;
use serde_json::{json, Value};
use trellis_model::api::{InstanceDetail, Started};
use trellis_model::{InstanceStatus, NodeStatus};

/// `up -> flaky -> down`; `flaky` fails its first attempt only, and has no retry policy,
/// so the first run fails and a retry succeeds.
fn flaky_chain() -> Value {
    json!({
        "nodes": [{"id": "up", "type": "transform", "config": {"expression": "{'n': 1}"}},
                  {"id": "flaky", "type": "fail", "config": {"fail_attempts": 1}},
                  {"id": "down", "type": "noop"}],
        "edges": [{"from": "up", "to": "flaky"}, {"from": "flaky", "to": "down"}]
    })
}

async fn retry(app: &TestApp, id: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/api/v1/instances/{id}/retry")).json(&body).send().await.unwrap()
}

async fn failed_instance(app: &TestApp) -> String {
    let wf = app.publish(flaky_chain()).await;
    let id = app.start(&wf, json!({})).await;
    let failed = app.wait_finished(&id).await;
    assert_eq!(failed.summary.status, InstanceStatus::Failed, "{failed:?}");
    id
}

fn attempts(instance: &InstanceDetail) -> Vec<i32> {
    ["up", "flaky", "down"].iter().map(|n| node(instance, n).attempts).collect()
}

async fn retry_from_failed_keeps_succeeded_outputs_and_reruns_the_failed_branch(app: TestApp) {
    let id = failed_instance(&app).await;
    let response = retry(&app, &id, json!({"from": "failed"})).await;
    assert_eq!(response.status(), 200);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(attempts(&done), [1, 2, 1], "up did not run again; flaky's attempt numbers continue");
    assert_eq!(node(&done, "up").output, Some(json!({"n": 1})));
    assert!(done.summary.error.is_none(), "the last run's error is gone: {done:?}");
    // Nothing failed now: a retry from failed does not apply, from start does.
    let nothing = problem(retry(&app, &id, json!({"from": "failed"})).await, 409).await;
    assert!(nothing["detail"].as_str().unwrap().contains("\"start\""), "{nothing}");
    assert_eq!(retry(&app, &id, json!({"from": "start"})).await.status(), 200);
    let again = app.wait_finished(&id).await;
    assert_eq!(again.summary.status, InstanceStatus::Succeeded);
    assert_eq!(attempts(&again), [2, 3, 2]);
}

async fn retry_from_a_node_reruns_it_and_its_descendants(app: TestApp) {
    let id = failed_instance(&app).await;
    retry(&app, &id, json!({"from": "failed"})).await;
    app.wait_finished(&id).await;
    assert_eq!(retry(&app, &id, json!({"from": "down"})).await.status(), 200);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    assert_eq!(attempts(&done), [1, 2, 2]);
    let latest = retry(&app, &id, json!({"from": "flaky", "latest_version": true})).await;
    assert_eq!(latest.status(), 200, "the instance already runs the latest version");
    assert_eq!(attempts(&app.wait_finished(&id).await), [1, 3, 3]);
}

async fn a_retry_that_does_not_apply_says_what_to_do(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})).await;
    let running = app.start(&wf, json!({})).await;
    let refused = problem(retry(&app, &running, json!({"from": "start"})).await, 409).await;
    assert!(refused["detail"].as_str().unwrap().contains("cancel"), "{refused}");
    let id = failed_instance(&app).await;
    let unknown = problem(retry(&app, &id, json!({"from": "nope"})).await, 422).await;
    assert!(unknown["detail"].as_str().unwrap().contains("`nope`"), "{unknown}");
    let missing = retry(&app, &id, json!({})).await;
    assert!(matches!(missing.status().as_u16(), 400 | 422), "{}", missing.status());
    problem(retry(&app, &uuid::Uuid::now_v7().to_string(), json!({"from": "start"})).await, 404).await;
    assert_eq!(app.instance(&id).await.summary.status, InstanceStatus::Failed, "nothing changed");
}

async fn a_retry_on_the_latest_version_keeps_matching_results_and_runs_new_nodes(app: TestApp) {
    let id = failed_instance(&app).await;
    let wf = app.instance(&id).await.summary.workflow_id;
    let mut v2 = flaky_chain();
    v2["nodes"].as_array_mut().unwrap().push(json!({"id": "extra", "type": "noop"}));
    v2["edges"].as_array_mut().unwrap().push(json!({"from": "down", "to": "extra"}));
    let saved =
        app.put(&format!("/api/v1/workflows/{wf}/draft")).header("if-match", "*").json(&v2).send().await.unwrap();
    assert!(saved.status().is_success(), "{}", saved.status());
    assert!(app.post(&format!("/api/v1/workflows/{wf}/versions")).send().await.unwrap().status().is_success());
    let unknown = problem(retry(&app, &id, json!({"from": "ghost", "latest_version": true})).await, 422).await;
    assert!(unknown["detail"].as_str().unwrap().contains("version 2"), "{unknown}");
    assert_eq!(retry(&app, &id, json!({"from": "failed", "latest_version": true})).await.status(), 200);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(done.summary.version, 2);
    assert_eq!(attempts(&done), [1, 2, 1], "up kept its result");
    assert_eq!(node(&done, "extra").attempts, 1);
    assert_eq!(node(&done, "up").output, Some(json!({"n": 1})));
}

async fn a_retried_instance_keeps_a_contiguous_well_formed_history(app: TestApp) {
    let id = failed_instance(&app).await;
    retry(&app, &id, json!({"from": "failed"})).await;
    app.wait_finished(&id).await;
    let entries = history(&app, &id).await;
    let seqs: Vec<i64> = entries.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=entries.len() as i64).collect::<Vec<_>>());
    let field = |e: &Value, k: &str| if e["data"].is_object() { e["data"][k].clone() } else { e[k].clone() };
    let changes: Vec<String> = entries
        .iter()
        .filter(|e| e["event"] == "instance")
        .map(|e| format!("{}->{}", field(e, "previous").as_str().unwrap_or("-"), field(e, "status").as_str().unwrap()))
        .collect();
    assert_eq!(changes, ["-->running", "running->failed", "failed->running", "running->succeeded"]);
    // Every span that starts also ends, once; the second run has its own instance span.
    let mut open = std::collections::HashSet::new();
    let mut roots = 0;
    for e in &entries {
        let span = field(e, "span_id");
        match e["event"].as_str().unwrap() {
            "span_start" => {
                assert!(open.insert(span.to_string()), "a span starts once");
                roots += usize::from(field(e, "kind") == "instance");
            }
            "span_end" => assert!(open.remove(&span.to_string()), "ends after it starts"),
            _ => {}
        }
    }
    assert!(open.is_empty(), "every span ended");
    assert_eq!(roots, 2);
}

async fn a_retry_takes_a_concurrency_slot_queueing_or_refused_like_a_start(app: TestApp) {
    for (on_limit, expected) in [("reject", 429), ("queue", 202)] {
        let wf = app
            .publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}],
            "settings": {"max_concurrent_instances": 1, "on_limit": on_limit}}))
            .await;
        let first = app.start(&wf, json!({})).await;
        app.post(&format!("/api/v1/instances/{first}/cancel")).send().await.unwrap();
        let second = app.start(&wf, json!({})).await;
        let response = retry(&app, &first, json!({"from": "failed"})).await;
        assert_eq!(response.status().as_u16(), expected, "{on_limit}");
        if on_limit == "queue" {
            assert_eq!(app.instance(&first).await.summary.status, InstanceStatus::Queued);
            app.post(&format!("/api/v1/instances/{second}/cancel")).send().await.unwrap();
            let admitted = app.wait_for(&first, |i| node(i, "gate").status == NodeStatus::Waiting).await;
            assert_eq!(admitted.summary.status, InstanceStatus::Running);
            assert_eq!(node(&admitted, "gate").attempts, 2);
        } else {
            assert_eq!(
                app.instance(&first).await.summary.status,
                InstanceStatus::Canceled,
                "a refused retry changes nothing"
            );
        }
    }
}

async fn a_retry_never_makes_a_second_live_instance_with_one_key(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})).await;
    let start =
        |key: &'static str| app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"key": key})).send();
    let first = start("k").await.unwrap().json::<Started>().await.unwrap().id;
    app.post(&format!("/api/v1/instances/{first}/cancel")).send().await.unwrap();
    assert_eq!(start("k").await.unwrap().status(), 201);
    let refused = problem(retry(&app, &first, json!({"from": "failed"})).await, 409).await;
    assert!(refused["detail"].as_str().unwrap().contains("business key"), "{refused}");
    assert_eq!(app.instance(&first).await.summary.status, InstanceStatus::Canceled);
}
both_backends!(
    retry_from_failed_keeps_succeeded_outputs_and_reruns_the_failed_branch,
    retry_from_a_node_reruns_it_and_its_descendants,
    a_retry_that_does_not_apply_says_what_to_do,
    a_retry_on_the_latest_version_keeps_matching_results_and_runs_new_nodes,
    a_retried_instance_keeps_a_contiguous_well_formed_history,
    a_retry_takes_a_concurrency_slot_queueing_or_refused_like_a_start,
    a_retry_never_makes_a_second_live_instance_with_one_key
);
