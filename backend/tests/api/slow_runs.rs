//! Slow runs: a node running past its own `stuck_after_ms`, or past k× the p95 of its recent
//! successful runs, is marked slow on the instance and found by `?slow=true`.

use crate::cli_client::{assert_exit, stdout, Client};
use crate::common::{both_backends, node, Backend, TestApp};
use crate::subworkflows::{publish_draft, save_draft};
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::api::InstancePage;
use trellis_model::NodeStatus;

fn waits(stuck_after_ms: Option<u64>) -> Value {
    let mut wait = json!({"id": "wait", "type": "delay", "config": {"duration_ms": 60_000}});
    if let Some(ms) = stuck_after_ms {
        wait["stuck_after_ms"] = json!(ms);
    }
    json!({"nodes": [{"id": "first", "type": "noop"}, wait], "edges": [{"from": "first", "to": "wait"}]})
}

async fn slow_list(app: &TestApp, workflow: &str) -> InstancePage {
    let answer = app.get(&format!("/api/v1/instances?slow=true&workflow={workflow}")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    answer.json().await.unwrap()
}

async fn a_node_past_its_stuck_after_ms_is_slow_on_the_instance_and_in_the_list(app: TestApp) {
    let stuck = app.publish(waits(Some(200))).await;
    let patient = app.publish(waits(Some(3_600_000))).await;
    let plain = app.publish(waits(None)).await;
    let slow_one = app.start(&stuck, json!({})).await;
    let others = [app.start(&patient, json!({})).await, app.start(&plain, json!({})).await];

    let shown =
        app.wait_for(&slow_one, |i| node(i, "wait").status == NodeStatus::Waiting && node(i, "wait").slow).await;
    let wait = node(&shown, "wait");
    assert_eq!((wait.slow_after_ms, wait.slow_basis.as_deref()), (Some(200), Some("stuck_after_ms")));
    assert!(!node(&shown, "first").slow, "a finished node is never slow");
    let raw = app.instance_json(&slow_one).await;
    let wire = raw["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "wait").unwrap();
    assert_eq!((&wire["slow"], &wire["slow_after_ms"]), (&json!(true), &json!(200)));

    let listed = slow_list(&app, &stuck).await;
    let ids: Vec<&str> = listed.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, [slow_one.as_str()]);
    assert_eq!(listed.counts.get(trellis_model::InstanceStatus::Running), 1, "the counts follow the filter");

    // Within its threshold, or without one (and no history to judge by): not slow.
    let patient_shown = app.wait_for(&others[0], |i| node(i, "wait").status == NodeStatus::Waiting).await;
    let wait = node(&patient_shown, "wait");
    assert!(!wait.slow && wait.slow_after_ms == Some(3_600_000), "{wait:?}");
    assert!(slow_list(&app, &patient).await.items.is_empty());
    let plain_shown = app.wait_for(&others[1], |i| node(i, "wait").status == NodeStatus::Waiting).await;
    assert!(!node(&plain_shown, "wait").slow && node(&plain_shown, "wait").slow_after_ms.is_none());
    assert!(slow_list(&app, &plain).await.items.is_empty());

    // Once canceled it is no longer a slow run.
    assert_eq!(app.post(&format!("/api/v1/instances/{slow_one}/cancel")).send().await.unwrap().status(), 200);
    assert!(slow_list(&app, &stuck).await.items.is_empty());
}

async fn a_zero_stuck_after_ms_is_refused_naming_it(app: TestApp) {
    let created = app.create_workflow(json!({"name": "zero", "definition": {"nodes": []}})).await;
    let id = created.summary.id;
    let body = json!({"nodes": [{"id": "a", "type": "noop", "stuck_after_ms": 0}]});
    let checked: Value =
        app.post(&format!("/api/v1/workflows/{id}/validate")).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(checked["valid"], false, "{checked}");
    assert_eq!(checked["errors"][0]["path"], "nodes[0].stuck_after_ms", "{checked}");
}

/// `trellis instance list --slow` is the list's `?slow=true`; the bulk actions take it too.
async fn the_cli_lists_slow_runs_with_slow(app: TestApp) {
    let stuck = app.publish(waits(Some(200))).await;
    let patient = app.publish(waits(Some(3_600_000))).await;
    let slow_one = app.start(&stuck, json!({})).await;
    let other = app.start(&patient, json!({})).await;
    app.wait_for(&slow_one, |i| node(i, "wait").slow).await;
    app.wait_for(&other, |i| node(i, "wait").status == NodeStatus::Waiting).await;
    let cli = Client::new(&app).await;
    let ids = |out: &std::process::Output| -> Vec<String> {
        let listed: Value = serde_json::from_str(&stdout(out)).unwrap();
        listed.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect()
    };
    let slow = cli.run(&["instance", "list", "--slow", "-o", "json"]).await;
    assert_exit(&slow, 0);
    assert_eq!(ids(&slow), [slow_one.as_str()]);
    let all = cli.run(&["instance", "list", "-o", "json"]).await;
    assert_eq!(ids(&all).len(), 2, "without --slow every run");
    let none = cli.run(&["instance", "list", "--slow", "-w", &patient, "-o", "json"]).await;
    assert!(ids(&none).is_empty(), "--slow combines with the other filters");
    let dry = cli.run(&["instance", "cancel", "--slow", "--dry-run", "-o", "json"]).await;
    assert_exit(&dry, 0);
    let preview: Value = serde_json::from_str(&stdout(&dry)).unwrap();
    assert_eq!(preview["matched"], 1, "{preview}");
    let help = cli.run(&["instance", "list", "--help"]).await;
    assert!(stdout(&help).contains("--slow"), "{}", stdout(&help));
}

both_backends!(
    a_node_past_its_stuck_after_ms_is_slow_on_the_instance_and_in_the_list,
    a_zero_stuck_after_ms_is_refused_naming_it,
    the_cli_lists_slow_runs_with_slow,
);

/// Twenty quick runs of `step` make its p95; a version where `step` waits a minute is then slow
/// once the refresher has judged it (every 100 ms here, with a 1 ms floor).
async fn a_node_far_past_its_recent_p95_is_slow(backend: Backend) {
    let app = TestApp::spawn_with(backend, |serve| {
        serve.slow_refresh_ms = 100;
        serve.slow_floor_ms = 1;
    })
    .await;
    let quick = json!({"nodes": [{"id": "step", "type": "delay", "config": {"duration_ms": 5}}]});
    let wf = app.publish(quick).await;
    for _ in 0..20 {
        let id = app.start(&wf, json!({})).await;
        app.wait_finished(&id).await;
    }
    save_draft(&app, &wf, json!({"nodes": [{"id": "step", "type": "delay", "config": {"duration_ms": 60_000}}]})).await;
    assert_eq!(publish_draft(&app, &wf).await.status(), 201);
    let long = app.start(&wf, json!({})).await;
    let shown = app.wait_for(&long, |i| node(i, "step").slow).await;
    let step = node(&shown, "step");
    assert_eq!(step.slow_basis.as_deref(), Some("p95"));
    let threshold = step.slow_after_ms.unwrap();
    assert!((1..60_000).contains(&threshold), "3× a few ms: {threshold}");
    for _ in 0..50 {
        if slow_list(&app, &wf).await.items.iter().any(|i| i.id == long) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the slow run never showed in ?slow=true");
}

mod a_node_far_past_its_recent_p95_is_slow {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        a_node_far_past_its_recent_p95_is_slow(Backend::Sqlite).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        a_node_far_past_its_recent_p95_is_slow(Backend::Postgres).await
    }
}
