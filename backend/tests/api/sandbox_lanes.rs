//! The sandbox's lanes: scripts that never end fill only their share of the workers, so
//! expressions (transforms, concurrency keys) still run; and a request that cannot get a
//! worker within its bound answers 503 with `Retry-After` instead of hanging.

use crate::common::{both_backends, node, problem, Backend, TestApp};
use crate::sandbox::busy_workers;
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::{InstanceStatus, NodeStatus};

/// A script that spins until its own limit (longer than any of these tests).
fn spinner() -> Value {
    json!({"nodes": [{"id": "s", "type": "script", "config": {"source": "while (true) {}", "timeout_ms": 60000}}]})
}

fn keyed() -> Value {
    json!({"nodes": [{"id": "n", "type": "noop"}], "settings": {"concurrency_key": "input.k", "max_per_key": 1}})
}

/// Starts `count` spinning scripts and waits until `running` workers spin.
async fn spin(app: &TestApp, count: usize, running: usize) -> Vec<String> {
    let workflow = app.publish(spinner()).await;
    let mut spinners = Vec::new();
    for _ in 0..count {
        spinners.push(app.start(&workflow, json!({})).await);
    }
    wait_busy(running).await;
    spinners
}

/// Polls until `n` sandbox workers of this process are running (at most 30 s).
async fn wait_busy(n: usize) {
    for _ in 0..1_500 {
        if busy_workers().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{n} sandbox workers never ran at once: {:?}", busy_workers());
}

async fn cancel(app: &TestApp, ids: &[String]) {
    for id in ids {
        let canceled = app.post(&format!("/api/v1/instances/{id}/cancel")).json(&json!({})).send().await.unwrap();
        assert!(canceled.status().is_success(), "cancel {id}");
    }
}

async fn expressions_run_while_endless_scripts_fill_their_share(app: TestApp) {
    // Two workers for scripts (the harness's), both spinning, and one more script in line.
    let spinners = spin(&app, 3, 2).await;
    let transform = app
        .publish(json!({"nodes": [{"id": "t", "type": "transform", "config": {"expression": "input.n * 2"}}]}))
        .await;
    let id = app.start(&transform, json!({"input": {"n": 21}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "t").output, Some(json!(42)));
    // The key is evaluated inside the request: it answers rather than waiting for a script.
    let keyed = app.publish(keyed()).await;
    let started = app.start(&keyed, json!({"input": {"k": "a"}})).await;
    assert_eq!(app.wait_finished(&started).await.summary.status, InstanceStatus::Succeeded);
    for spinner in &spinners {
        let still = app.instance(spinner).await;
        assert_eq!(still.summary.status, InstanceStatus::Running, "the scripts still run: {still:?}");
    }
    assert_eq!(node(&app.instance(&spinners[0]).await, "s").status, NodeStatus::Running);
    cancel(&app, &spinners).await;
}

async fn a_request_that_gets_no_worker_in_time_answers_503_with_retry_after(app: TestApp) {
    let backend = if app.database_url.starts_with("sqlite") { Backend::Sqlite } else { Backend::Postgres };
    // One worker for scripts, one kept for expressions: a spinning script and a slow
    // expression fill both; the bound is short so the test need not wait long.
    let app = TestApp::spawn_with(backend, |serve| {
        serve.sandbox_workers = Some(1);
        serve.sandbox_timeout_ms = 60_000;
        serve.sandbox_request_wait_ms = 200;
    })
    .await;
    // Saving a workflow compiles it in the sandbox: both are published before it is full.
    let keyed = app.publish(keyed()).await;
    let slow = app
        .publish(json!({"nodes": [{"id": "t", "type": "transform",
            "config": {"expression": crate::sandbox::SLOW_EXPRESSION}}]}))
        .await;
    let mut running = spin(&app, 1, 1).await;
    running.push(app.start(&slow, json!({"input": {"s": "x"}})).await);
    wait_busy(2).await;

    let refused =
        app.post(&format!("/api/v1/workflows/{keyed}/instances")).json(&json!({"input": {"k": "a"}})).send().await;
    let refused = refused.unwrap();
    assert!(refused.headers().contains_key("retry-after"), "{:?}", refused.headers());
    let body = problem(refused, 503).await;
    assert!(body["detail"].as_str().unwrap().contains("the sandbox is busy"), "{body}");
    // A validation compiles in the sandbox too.
    let validated = app
        .post(&format!("/api/v1/workflows/{keyed}/validate"))
        .json(&keyed_definition_with("input.k ~ 'x'"))
        .send()
        .await
        .unwrap();
    assert!(validated.headers().contains_key("retry-after"));
    let body = problem(validated, 503).await;
    assert!(body["detail"].as_str().unwrap().contains("the sandbox is busy"), "{body}");
    // So does a webhook's input mapping: the sandbox's trouble, not the settings' (no 422).
    let trigger = app
        .post(&format!("/api/v1/workflows/{keyed}/triggers"))
        .json(&json!({"kind": "webhook", "input_mapping": "body.k"}))
        .send()
        .await
        .unwrap();
    assert!(trigger.headers().contains_key("retry-after"));
    let body = problem(trigger, 503).await;
    assert!(body["detail"].as_str().unwrap().contains("the sandbox is busy"), "{body}");
    let metrics = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("trellis_sandbox_busy_refusals_total{lane=\"expressions\"}"), "{metrics}");
    // Nothing was started by the refused request.
    let listed: Value =
        app.get(&format!("/api/v1/instances?workflow={keyed}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(0), "{listed}");
    cancel(&app, &running).await;
}

fn keyed_definition_with(key: &str) -> Value {
    let mut definition = keyed();
    definition["settings"]["concurrency_key"] = json!(key);
    definition
}

both_backends!(
    expressions_run_while_endless_scripts_fill_their_share,
    a_request_that_gets_no_worker_in_time_answers_503_with_retry_after
);
