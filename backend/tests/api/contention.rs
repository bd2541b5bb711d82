//! Contention: concurrent writers never see a deadlock or a serialization failure as an
//! error; the store runs such a transaction again.

use crate::common::{both_backends, Backend, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use trellis_model::InstanceStatus;

/// Starts `count` instances of `wf` at once, spread over `apps`, each with its own
/// Idempotency-Key and business key; returns every answer's status and body.
async fn keyed_burst(apps: &[&TestApp], wf: &str, round: usize, count: usize) -> Vec<(StatusCode, Value)> {
    let starts = (0..count).map(|n| {
        let app = apps[n % apps.len()];
        let request = app
            .post(&format!("/api/v1/workflows/{wf}/instances"))
            .header("idempotency-key", format!("delivery-{round}-{n}"))
            .json(&json!({"key": format!("order-{round}-{n}"), "input": {"n": n}}));
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            (status, response.json::<Value>().await.unwrap_or(Value::Null))
        }
    });
    crate::drafts::futures_join_all(starts).await
}

fn limited_workflow() -> Value {
    json!({
        "nodes": [{"id": "hold", "type": "delay", "config": {"duration_ms": 50}}],
        "edges": [],
        "settings": {"max_concurrent_instances": 2, "on_limit": "queue"}
    })
}

async fn assert_all_started(app: &TestApp, answers: &[(StatusCode, Value)]) {
    for (status, body) in answers {
        assert!(
            *status == StatusCode::CREATED || *status == StatusCode::ACCEPTED,
            "every keyed start on a limited workflow is accepted, got {status}: {body}"
        );
    }
    // Every one of them runs to the end through the queue.
    for (_, body) in answers {
        let finished = app.wait_finished(body["id"].as_str().unwrap()).await;
        assert_eq!(finished.summary.status, InstanceStatus::Succeeded);
    }
}

async fn keyed_starts_on_a_limited_workflow_all_start_under_a_burst(app: TestApp) {
    let wf = app.publish(limited_workflow()).await;
    let answers = keyed_burst(&[&app], &wf, 0, 24).await;
    assert_all_started(&app, &answers).await;
}
both_backends!(keyed_starts_on_a_limited_workflow_all_start_under_a_burst);

/// Two processes on one Postgres: before the workflow lock stopped conflicting with the
/// foreign-key locks of idempotency records, 15 of 16 such starts failed with a deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keyed_starts_on_a_limited_workflow_from_two_processes_never_deadlock() {
    let first = TestApp::spawn(Backend::Postgres).await;
    let second = first.spawn_peer().await;
    let wf = first.publish(limited_workflow()).await;
    for round in 0..3 {
        let answers = keyed_burst(&[&first, &second], &wf, round, 16).await;
        let failed: Vec<_> = answers.iter().filter(|(s, _)| s.is_server_error()).collect();
        assert!(failed.is_empty(), "round {round}: {failed:?}");
        assert_all_started(&first, &answers).await;
        // The same keys again answer the first starts, from either process.
        let again = keyed_burst(&[&second, &first], &wf, round, 16).await;
        let ids = |a: &[(StatusCode, Value)]| a.iter().map(|(_, b)| b["id"].clone()).collect::<Vec<_>>();
        assert_eq!(ids(&again), ids(&answers), "repeated keys return the first instances");
    }
}
