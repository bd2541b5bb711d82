//! Operator actions on instances: pause and resume (and, below, what does not apply).

use crate::common::{both_backends, node, problem, TestApp};
use crate::traces::history;
use serde_json::json;
use trellis_model::api::InstanceDetail;
use trellis_model::{InstanceStatus, NodeStatus};

async fn act(app: &crate::common::TestApp, id: &str, action: &str) -> reqwest::Response {
    app.post(&format!("/api/v1/instances/{id}/{action}")).send().await.unwrap()
}

/// The instance status changes the history records, as (previous, status).
async fn instance_changes(app: &crate::common::TestApp, id: &str) -> Vec<(String, String)> {
    let entries = history(app, id).await;
    entries
        .iter()
        .filter(|e| e["event"] == "instance")
        .map(|e| {
            // An entry's fields sit beside `seq` and `event` (or under `data`).
            let data = if e["data"].is_object() { &e["data"] } else { e };
            (data["previous"].as_str().unwrap_or("-").to_owned(), data["status"].as_str().unwrap().to_owned())
        })
        .collect()
}

async fn pause_stops_dispatch_and_resume_runs_to_success(app: TestApp) {
    let wf = app
        .publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}, {"id": "next", "type": "noop"}],
        "edges": [{"from": "gate", "to": "next"}]}))
        .await;
    let id = app.start(&wf, json!({})).await;
    app.wait_for(&id, |i| node(i, "gate").status == NodeStatus::Waiting).await;
    let paused = act(&app, &id, "pause").await;
    assert_eq!(paused.status(), 200);
    assert_eq!(paused.json::<InstanceDetail>().await.unwrap().summary.status, InstanceStatus::Paused);
    // The waiting node's result is still recorded, but its successor is not dispatched.
    let signaled = app
        .post(&format!("/api/v1/instances/{id}/signal"))
        .json(&json!({"node": "gate", "payload": {"ok": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(signaled.status(), 200);
    let held = app.instance(&id).await;
    assert_eq!(held.summary.status, InstanceStatus::Paused, "{held:?}");
    assert_eq!(node(&held, "gate").status, NodeStatus::Succeeded);
    assert_eq!(node(&held, "next").status, NodeStatus::Ready, "{held:?}");
    assert_eq!(node(&held, "next").attempts, 0);
    let resumed = act(&app, &id, "resume").await;
    assert_eq!(resumed.status(), 200);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "next").attempts, 1);
    let changes = instance_changes(&app, &id).await;
    let tail: Vec<_> = changes.iter().map(|(p, s)| format!("{p}->{s}")).collect();
    assert_eq!(tail, ["-->running", "running->paused", "paused->running", "running->succeeded"]);
}

async fn pause_and_resume_that_do_not_apply_are_409_saying_why(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})).await;
    let id = app.start(&wf, json!({})).await;
    app.wait_for(&id, |i| node(i, "gate").status == NodeStatus::Waiting).await;
    let not_paused = problem(act(&app, &id, "resume").await, 409).await;
    assert!(not_paused["detail"].as_str().unwrap().contains("not paused"), "{not_paused}");
    assert_eq!(act(&app, &id, "pause").await.status(), 200);
    let twice = problem(act(&app, &id, "pause").await, 409).await;
    assert!(twice["detail"].as_str().unwrap().contains("already paused"), "{twice}");
    // A paused instance can still be canceled, and then neither action applies.
    assert_eq!(act(&app, &id, "cancel").await.status(), 200);
    let finished = problem(act(&app, &id, "pause").await, 409).await;
    assert!(finished["detail"].as_str().unwrap().contains("canceled"), "{finished}");
    problem(act(&app, &id, "resume").await, 409).await;
    let missing = act(&app, &uuid::Uuid::now_v7().to_string(), "pause").await;
    problem(missing, 404).await;
}

async fn a_timer_that_fires_while_paused_is_recorded_and_its_follow_up_waits(app: TestApp) {
    // The node's timeout is the timer: it fires while the instance is paused.
    let wf = app.publish(json!({"nodes": [{"id": "stuck", "type": "wait_signal", "timeout_ms": 1000}, {"id": "recover", "type": "noop"}],
        "edges": [{"from": "stuck", "to": "recover", "when": "failure"}]})).await;
    let id = app.start(&wf, json!({})).await;
    app.wait_for(&id, |i| node(i, "stuck").status == NodeStatus::Waiting).await;
    assert_eq!(act(&app, &id, "pause").await.status(), 200);
    let fired = app.wait_for(&id, |i| node(i, "stuck").status == NodeStatus::TimedOut).await;
    assert_eq!(fired.summary.status, InstanceStatus::Paused, "{fired:?}");
    assert_eq!(node(&fired, "recover").attempts, 0, "nothing is dispatched while paused");
    assert_eq!(act(&app, &id, "resume").await.status(), 200);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "recover").status, NodeStatus::Succeeded);
}

async fn an_instance_whose_last_node_ends_while_paused_finishes_on_resume(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})).await;
    let id = app.start(&wf, json!({})).await;
    app.wait_for(&id, |i| node(i, "gate").status == NodeStatus::Waiting).await;
    assert_eq!(act(&app, &id, "pause").await.status(), 200);
    app.post(&format!("/api/v1/instances/{id}/signal"))
        .json(&json!({"node": "gate", "payload": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(app.instance(&id).await.summary.status, InstanceStatus::Paused);
    let resumed: InstanceDetail = act(&app, &id, "resume").await.json().await.unwrap();
    assert_eq!(resumed.summary.status, InstanceStatus::Succeeded, "{resumed:?}");
    assert_eq!(resumed.output, Some(json!({"gate": 1})));
}

async fn a_viewer_cannot_pause(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})).await;
    let id = app.start(&wf, json!({})).await;
    let token = app.token_for("viewer").await;
    let response = trellis::http_client::builder()
        .build()
        .unwrap()
        .post(app.url(&format!("/api/v1/instances/{id}/pause")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
}
both_backends!(
    pause_stops_dispatch_and_resume_runs_to_success,
    pause_and_resume_that_do_not_apply_are_409_saying_why,
    a_timer_that_fires_while_paused_is_recorded_and_its_follow_up_waits,
    an_instance_whose_last_node_ends_while_paused_finishes_on_resume,
    a_viewer_cannot_pause
);
