//! Bounded evaluation and bounded storage: expression CPU and memory bombs in transform
//! nodes and webhook input mappings neither stall the server nor grow it, and outputs over
//! the caps are refused naming the cap. The timing assertions are deliberately generous
//! (2 s): before the fix a stalled runtime answered after tens of seconds, or never.

use crate::common::{both_backends, problem, TestApp};
use crate::webhooks::{create_webhook, signature};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trellis_model::api::InstanceDetail;
use trellis_model::{InstanceStatus, NodeStatus};

/// Every filter walks 100,000 items; 40 of them is more than one evaluation may spend (and
/// short enough for a webhook's input mapping).
fn budget_bomb() -> String {
    (0..40).map(|_| "(range(100000) | sum)").collect::<Vec<_>>().join(" + ")
}

/// A sequence of a hundred million items (the most minijinja itself repeats a sequence to),
/// walked by `sum` in one instruction.
const REPEATED_RANGE: &str = "(range(100000) * 1000) | sum";

fn transform(expression: &str) -> Value {
    json!({"nodes": [{"id": "t", "type": "transform", "config": {"expression": expression}}]})
}

/// Probes `/healthz` and the API every 50 ms until stopped; returns the slowest answer.
fn probe(app: &TestApp) -> (Arc<AtomicBool>, tokio::task::JoinHandle<Duration>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (client, health, api, token) =
        (app.client.clone(), app.url("/healthz"), app.url("/api/v1/instances"), app.admin_token.clone());
    let stopped = stop.clone();
    let handle = tokio::spawn(async move {
        let mut slowest = Duration::ZERO;
        while !stopped.load(Ordering::SeqCst) {
            let started = Instant::now();
            assert!(client.get(&health).send().await.unwrap().status().is_success());
            assert!(client.get(&api).bearer_auth(&token).send().await.unwrap().status().is_success());
            slowest = slowest.max(started.elapsed());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        slowest
    });
    (stop, handle)
}

async fn slowest_probe(probe: (Arc<AtomicBool>, tokio::task::JoinHandle<Duration>)) -> Duration {
    probe.0.store(true, Ordering::SeqCst);
    probe.1.await.unwrap()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The resident memory of this process (the server runs in it), in bytes.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

fn error_of(instance: &InstanceDetail) -> String {
    instance.summary.error.clone().unwrap_or_default()
}

async fn expression_cpu_bombs_fail_with_a_clear_error_while_the_api_keeps_answering(app: TestApp) {
    let heavy = app.publish(transform(&budget_bomb())).await;
    let bomb = app.publish(transform(REPEATED_RANGE)).await;
    let probes = probe(&app);
    let mut ids = Vec::new();
    for _ in 0..=cores() {
        ids.push((app.start(&heavy, json!({"input": {}})).await, "budget of"));
        ids.push((app.start(&bomb, json!({"input": {}})).await, "over the cap of 100000 items"));
    }
    for (id, expected) in &ids {
        let finished = app.wait_finished(id).await;
        assert_eq!(finished.summary.status, InstanceStatus::Failed, "{finished:?}");
        assert!(error_of(&finished).contains(expected), "{finished:?}");
    }
    let slowest = slowest_probe(probes).await;
    eprintln!("slowest probe: {slowest:?}");
    assert!(slowest < Duration::from_secs(2), "a probe took {slowest:?}");
}

async fn a_memory_bomb_fails_with_the_cap_error_and_memory_stays_bounded(app: TestApp) {
    let before = rss_bytes();
    // 500 joins of a 1 MB separator: half a gigabyte, then its JSON copies.
    let wf = app.publish(transform("range(500) | join('x' * 1000000)")).await;
    let id = app.start(&wf, json!({"input": {}})).await;
    let finished = app.wait_finished(&id).await;
    assert_eq!(finished.summary.status, InstanceStatus::Failed);
    assert!(error_of(&finished).contains("over the cap of 1048576 bytes per string"), "{finished:?}");
    let grown = rss_bytes().saturating_sub(before);
    eprintln!("RSS grew by {} KB", grown >> 10);
    assert!(grown < 200 << 20, "RSS grew by {} MB", grown >> 20);
}

async fn a_webhook_whose_input_mapping_is_a_cpu_bomb_does_not_stall_the_server(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let probes = probe(&app);
    let (trigger, secret) = create_webhook(&app, &wf, json!({"input_mapping": REPEATED_RANGE})).await;
    let (heavy, heavy_secret) = create_webhook(&app, &wf, json!({"input_mapping": budget_bomb()})).await;
    let mut deliveries = Vec::new();
    for i in 0..=cores() {
        for (trigger, secret) in [(&trigger, &secret), (&heavy, &heavy_secret)] {
            let (id, ts, body) = (format!("bomb-{i}"), chrono::Utc::now().timestamp(), "{}");
            let request = app
                .client
                .post(app.url(&format!("/hooks/{trigger}")))
                .header("content-type", "application/json")
                .header("webhook-id", &id)
                .header("webhook-timestamp", ts.to_string())
                .header("webhook-signature", signature(secret, &id, ts, body))
                .body(body);
            deliveries.push(tokio::spawn(request.send()));
        }
    }
    for delivery in deliveries {
        let refused = problem(delivery.await.unwrap().unwrap(), 422).await;
        let detail = refused["detail"].as_str().unwrap();
        assert!(
            detail.contains("input mapping") && (detail.contains("over the cap") || detail.contains("budget of")),
            "{detail}"
        );
    }
    let slowest = slowest_probe(probes).await;
    eprintln!("slowest probe: {slowest:?}");
    assert!(slowest < Duration::from_secs(2), "a probe took {slowest:?}");
}

async fn a_node_whose_output_is_over_the_cap_fails_naming_the_cap(app: TestApp) {
    let big = app.publish(transform("'x' * 3000000")).await;
    let id = app.start(&big, json!({"input": {}})).await;
    let finished = app.wait_finished(&id).await;
    assert_eq!(finished.summary.status, InstanceStatus::Failed);
    // The expression's own string cap (1 MiB) stops it first.
    assert!(error_of(&finished).contains("over the cap of 1048576 bytes"), "{finished:?}");
}
both_backends!(
    expression_cpu_bombs_fail_with_a_clear_error_while_the_api_keeps_answering,
    a_memory_bomb_fails_with_the_cap_error_and_memory_stays_bounded,
    a_webhook_whose_input_mapping_is_a_cpu_bomb_does_not_stall_the_server,
    a_node_whose_output_is_over_the_cap_fails_naming_the_cap
);

/// A server with small output caps, so a test can reach them with small values.
async fn with_small_caps(backend: crate::common::Backend) -> TestApp {
    TestApp::spawn_with(backend, |serve| {
        serve.max_node_output_bytes = 10_000;
        serve.max_instance_output_bytes = 15_000;
    })
    .await
}

mod output_caps {
    use super::*;
    use crate::common::Backend;

    async fn run(app: TestApp) {
        // One node over the per-node cap.
        let big = app.publish(transform("'x' * 20000")).await;
        let finished = app.wait_finished(&app.start(&big, json!({"input": {}})).await).await;
        assert_eq!(finished.summary.status, InstanceStatus::Failed);
        assert!(
            error_of(&finished)
                .contains("20002 bytes, over the cap of 10000 bytes per node output (TRELLIS_MAX_NODE_OUTPUT_BYTES)"),
            "{finished:?}"
        );

        // Each node fits, but together they pass the instance's cap.
        let two = app
            .publish(json!({
                "nodes": [
                    {"id": "a", "type": "transform", "config": {"expression": "'x' * 8000"}},
                    {"id": "b", "type": "transform", "config": {"expression": "'y' * 8000"}}
                ],
                "edges": [{"from": "a", "to": "b"}]
            }))
            .await;
        let finished = app.wait_finished(&app.start(&two, json!({"input": {}})).await).await;
        assert_eq!(finished.summary.status, InstanceStatus::Failed);
        assert!(
            error_of(&finished)
                .contains("over the cap of 15000 bytes per instance (TRELLIS_MAX_INSTANCE_OUTPUT_BYTES)"),
            "{finished:?}"
        );
        assert!(app.instance_json(&finished.summary.id).await.to_string().len() < 40_000);

        // An external worker's result over the cap is refused, not stored; one that fits lands.
        let task = app.publish(json!({"nodes": [{"id": "send", "type": "task", "config": {"queue": "caps"}}]})).await;
        let id = app.start(&task, json!({"input": {}})).await;
        let polled = app
            .post("/api/v1/tasks/poll")
            .json(&json!({"queue": "caps", "worker": "w", "wait_ms": 5000}))
            .send()
            .await
            .unwrap();
        let leased: Value = polled.json().await.unwrap();
        let complete = |output: Value| {
            app.post(&format!("/api/v1/tasks/{}/complete", leased["id"].as_str().unwrap()))
                .json(&json!({"lease_token": leased["lease_token"], "output": output}))
        };
        let refused = problem(complete(json!("z".repeat(20_000))).send().await.unwrap(), 413).await;
        assert!(refused["detail"].as_str().unwrap().contains("TRELLIS_MAX_NODE_OUTPUT_BYTES"), "{refused}");
        assert_eq!(app.instance(&id).await.summary.status, InstanceStatus::Running);
        assert_eq!(complete(json!({"ok": true})).send().await.unwrap().status(), 204);
        assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);

        // So is a signal's payload.
        let wait = app.publish(json!({"nodes": [{"id": "approve", "type": "wait_signal"}]})).await;
        let id = app.start(&wait, json!({"input": {}})).await;
        app.wait_for(&id, |i| i.nodes.iter().any(|n| n.status == NodeStatus::Waiting)).await;
        let signal = app
            .post(&format!("/api/v1/instances/{id}/signal"))
            .json(&json!({"node": "approve", "payload": "z".repeat(20_000)}));
        let refused = problem(signal.send().await.unwrap(), 413).await;
        assert!(refused["detail"].as_str().unwrap().contains("over the cap of 10000 bytes"), "{refused}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        run(with_small_caps(Backend::Sqlite).await).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        run(with_small_caps(Backend::Postgres).await).await
    }
}
