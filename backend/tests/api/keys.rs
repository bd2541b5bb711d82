//! Business keys: the per-workflow `key_reuse` policy, and one live instance per key
//! under concurrent starts.

use crate::common::{both_backends, problem, TestApp};
use serde_json::{json, Value};
use trellis_model::InstanceStatus;

/// A workflow whose instances wait for a signal, so they stay running until told.
async fn waiting_workflow(app: &TestApp, key_reuse: Option<&str>) -> String {
    let mut definition = json!({"nodes": [{"id": "gate", "type": "wait_signal"}]});
    if let Some(policy) = key_reuse {
        definition["settings"] = json!({"key_reuse": policy});
    }
    app.publish(definition).await
}

async fn start_keyed(app: &TestApp, wf: &str, key: &str) -> reqwest::Response {
    app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"key": key})).send().await.unwrap()
}

async fn created(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 201);
    response.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
}

async fn act(app: &TestApp, id: &str, action: &str) {
    let body = if action == "signal" { json!({"node": "gate", "payload": {}}) } else { json!({}) };
    let response = app.post(&format!("/api/v1/instances/{id}/{action}")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200, "{action}");
}

async fn live_with_key(app: &TestApp, wf: &str, key: &str) -> Vec<Value> {
    let list: Value =
        app.get(&format!("/api/v1/instances?workflow={wf}&key={key}")).send().await.unwrap().json().await.unwrap();
    let live = ["queued", "running", "paused"];
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| live.contains(&i["status"].as_str().unwrap()))
        .cloned()
        .collect()
}

async fn by_default_a_key_is_refused_only_while_its_instance_is_live(app: TestApp) {
    let wf = waiting_workflow(&app, None).await;
    let first = created(start_keyed(&app, &wf, "order-1").await).await;
    let refused = problem(start_keyed(&app, &wf, "order-1").await, 409).await;
    assert!(refused["detail"].as_str().unwrap().contains(&first), "names the live instance: {refused}");
    created(start_keyed(&app, &wf, "order-2").await).await;
    act(&app, &first, "signal").await;
    app.wait_finished(&first).await;
    created(start_keyed(&app, &wf, "order-1").await).await;
    // The default is not written into the stored definition.
    let version: Value =
        app.get(&format!("/api/v1/workflows/{wf}/versions/1")).send().await.unwrap().json().await.unwrap();
    assert!(version.to_string().find("key_reuse").is_none(), "{version}");
}

async fn allow_duplicate_failed_only_refuses_a_key_that_succeeded(app: TestApp) {
    let wf = waiting_workflow(&app, Some("allow_duplicate_failed_only")).await;
    let first = created(start_keyed(&app, &wf, "k").await).await;
    act(&app, &first, "cancel").await;
    let second = created(start_keyed(&app, &wf, "k").await).await;
    act(&app, &second, "signal").await;
    assert_eq!(app.wait_finished(&second).await.summary.status, InstanceStatus::Succeeded);
    let refused = problem(start_keyed(&app, &wf, "k").await, 409).await;
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains(&second) && detail.contains("allow_duplicate_failed_only") && detail.contains("succeeded"),
        "{detail}"
    );
}

async fn reject_duplicate_refuses_any_earlier_key(app: TestApp) {
    let wf = waiting_workflow(&app, Some("reject_duplicate")).await;
    let first = created(start_keyed(&app, &wf, "k").await).await;
    act(&app, &first, "cancel").await;
    let refused = problem(start_keyed(&app, &wf, "k").await, 409).await;
    assert!(refused["detail"].as_str().unwrap().contains(&first), "{refused}");
    created(start_keyed(&app, &wf, "other").await).await;
    // Without a key the policy does not apply.
    assert_eq!(
        app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({})).send().await.unwrap().status(),
        201
    );
}

async fn terminate_if_running_cancels_the_live_instance_and_starts_the_new_one(app: TestApp) {
    let wf = waiting_workflow(&app, Some("terminate_if_running")).await;
    let first = created(start_keyed(&app, &wf, "k").await).await;
    let second = created(start_keyed(&app, &wf, "k").await).await;
    assert_eq!(app.instance(&first).await.summary.status, InstanceStatus::Canceled);
    let live = live_with_key(&app, &wf, "k").await;
    assert_eq!(live.len(), 1);
    assert_eq!(live[0]["id"], second.as_str());
}

async fn an_unknown_key_reuse_policy_is_refused(app: TestApp) {
    let created =
        app.create_workflow(json!({"name": "keys", "definition": {"nodes": [{"id": "a", "type": "noop"}]}})).await;
    let id = created.summary.id.as_str();
    let bad = json!({"nodes": [{"id": "a", "type": "noop"}], "settings": {"key_reuse": "sometimes"}});
    let response =
        app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&bad).send().await.unwrap();
    let status = response.status().as_u16();
    assert!(status == 400 || status == 422, "{status}");
    let body = problem(response, status).await;
    assert!(body.to_string().contains("key_reuse") || body.to_string().contains("sometimes"), "{body}");
}

async fn fifty_concurrent_starts_with_one_key_create_one_live_instance(app: TestApp) {
    let wf = waiting_workflow(&app, None).await;
    let starts = (0..50).map(|_| start_keyed(&app, &wf, "contended"));
    let responses = futures_util::future::join_all(starts).await;
    let statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 201 || *s == 409), "{statuses:?}");
    assert_eq!(live_with_key(&app, &wf, "contended").await.len(), 1);
}

async fn concurrent_terminating_starts_leave_exactly_one_live_instance(app: TestApp) {
    let wf = waiting_workflow(&app, Some("terminate_if_running")).await;
    let starts = (0..20).map(|_| start_keyed(&app, &wf, "latest"));
    let responses = futures_util::future::join_all(starts).await;
    assert!(responses.iter().all(|r| r.status() == 201 || r.status() == 409), "no 5xx");
    assert!(responses.iter().any(|r| r.status() == 201));
    assert_eq!(live_with_key(&app, &wf, "latest").await.len(), 1);
}
both_backends!(
    by_default_a_key_is_refused_only_while_its_instance_is_live,
    allow_duplicate_failed_only_refuses_a_key_that_succeeded,
    reject_duplicate_refuses_any_earlier_key,
    terminate_if_running_cancels_the_live_instance_and_starts_the_new_one,
    an_unknown_key_reuse_policy_is_refused,
    fifty_concurrent_starts_with_one_key_create_one_live_instance,
    concurrent_terminating_starts_leave_exactly_one_live_instance
);
