//! Starts written together (`engine/start_lane.rs`): starts that arrive at once share one
//! transaction, and a workflow's limit holds exactly as it does for starts one by one.

use crate::common::{both_backends, TestApp};
use serde_json::{json, Value};
use trellis_model::api::{InstancePage, Started};
use trellis_model::InstanceStatus;

/// `count` starts of `wf` sent at once; each answer's status code and body.
async fn burst(app: &TestApp, wf: &str, count: usize) -> Vec<(u16, Value)> {
    let starts = (0..count).map(|n| {
        let request = app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"input": {"n": n}}));
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    });
    crate::drafts::futures_join_all(starts).await
}

/// A gauge from `/metrics`.
async fn gauge(app: &TestApp, name: &str) -> f64 {
    let text = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    let prefix = format!("{name} ");
    let value = text.lines().find_map(|l| l.strip_prefix(prefix.as_str()));
    value.unwrap_or_else(|| panic!("{name} in {text}")).trim().parse().unwrap()
}

async fn listed(app: &TestApp, wf: &str) -> InstancePage {
    app.get(&format!("/api/v1/instances?workflow={wf}&limit=100")).send().await.unwrap().json().await.unwrap()
}

async fn a_burst_of_starts_shares_transactions_and_queues_beyond_the_limit(app: TestApp) {
    let hold = json!([{"id": "hold", "type": "wait_signal"}]);
    let wf = app.publish(json!({"nodes": hold, "settings": {"max_concurrent_instances": 3}})).await;
    let answers = burst(&app, &wf, 40).await;
    let started: Vec<Started> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 201, "{body}");
            serde_json::from_value(body.clone()).unwrap()
        })
        .collect();
    let running = started.iter().filter(|s| s.status == InstanceStatus::Running).count();
    assert_eq!(running, 3, "exactly the limit runs: {started:?}");
    let page = listed(&app, &wf).await;
    assert_eq!(page.counts.get(InstanceStatus::Running), 3);
    assert_eq!(page.counts.get(InstanceStatus::Queued), 37);
    let (batches, starts) =
        (gauge(&app, "trellis_engine_start_batches").await, gauge(&app, "trellis_engine_batched_starts").await);
    assert!(starts >= 40.0 && batches < starts, "some starts shared a transaction: {batches} batches, {starts} starts");

    // Freed slots go to the oldest queued instances, as for starts one by one.
    let mut queued: Vec<String> =
        started.iter().filter(|s| s.status == InstanceStatus::Queued).map(|s| s.id.to_string()).collect();
    queued.sort();
    for s in started.iter().filter(|s| s.status == InstanceStatus::Running) {
        let signaled = app.signal(&s.id.to_string(), json!({"node": "hold"})).await;
        assert!(signaled.status().is_success(), "{}", signaled.status());
    }
    for id in &queued[..3] {
        app.wait_for(id, |i| i.summary.status == InstanceStatus::Running).await;
    }
    let page = listed(&app, &wf).await;
    assert_eq!(page.counts.get(InstanceStatus::Running), 3, "still the limit");
    assert_eq!(page.counts.get(InstanceStatus::Succeeded), 3);
}

async fn a_burst_beyond_a_rejecting_limit_creates_only_what_fits(app: TestApp) {
    let hold = json!([{"id": "hold", "type": "wait_signal"}]);
    let wf =
        app.publish(json!({"nodes": hold, "settings": {"max_concurrent_instances": 2, "on_limit": "reject"}})).await;
    let answers = burst(&app, &wf, 20).await;
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    let refused = answers.iter().filter(|(status, _)| *status == 429).count();
    assert_eq!((created, refused), (2, 18), "{answers:?}");
    let page = listed(&app, &wf).await;
    assert_eq!(page.items.len(), 2, "a refused start writes nothing");
    assert_eq!(page.counts.get(InstanceStatus::Running), 2);
}

both_backends!(
    a_burst_of_starts_shares_transactions_and_queues_beyond_the_limit,
    a_burst_beyond_a_rejecting_limit_creates_only_what_fits
);
