//! The timer wheel: timers are claimed ahead of their due instant and held in memory. Held,
//! they still fire on time and never early, exactly once across processes, not at all once
//! their instance is canceled, and a process killed while holding them loses none.

use crate::common::{both_backends, fresh_database, node, on_both, Backend, TestApp};
use crate::crash::{check_history, count_in};
use crate::process::{Api, Process};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::{InstanceStatus, NodeStatus};

/// A delay until `due`, then a no-op.
fn wait_until(due: DateTime<Utc>) -> Value {
    json!({
        "nodes": [{"id": "wait", "type": "delay", "config": {"until": due.to_rfc3339()}}, {"id": "after", "type": "noop"}],
        "edges": [{"from": "wait", "to": "after"}]
    })
}

/// Starts `count` instances of `workflow`, spread over `apis`, 16 at a time.
async fn start_many(apis: &[&Api], workflow: &str, count: usize) -> Vec<String> {
    let path = format!("/api/v1/workflows/{workflow}/instances");
    let mut ids = Vec::with_capacity(count);
    for wave in (0..count).collect::<Vec<_>>().chunks(16) {
        let starts = wave.iter().map(|i| apis[i % apis.len()].post(&path, json!({})));
        for (status, started) in futures_util::future::join_all(starts).await {
            assert_eq!(status, 201, "{started}");
            ids.push(started["id"].as_str().unwrap().to_owned());
        }
    }
    ids
}

/// Every instance succeeded, its history whole, and its delay ended no earlier than `due`.
async fn check_all(api: &Api, ids: &[String], due: DateTime<Utc>) {
    for id in ids {
        let instance = api.get(&format!("/api/v1/instances/{id}")).await;
        assert_eq!(instance["status"], "succeeded", "{instance}");
        let history = api.get(&format!("/api/v1/instances/{id}/history?limit=1000")).await;
        check_history(&instance, history["items"].as_array().unwrap());
        let wait = instance["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "wait").unwrap();
        let ended: DateTime<Utc> = wait["ended_at"].as_str().unwrap().parse().unwrap();
        assert!(ended >= due, "{id}: the delay ended at {ended}, before it was due at {due}");
    }
}

/// A timer within the read-ahead is held in memory from soon after it is set; it fires when
/// due, not before; a canceled instance's held timer changes nothing when it comes due.
async fn a_held_timer_fires_when_due_and_a_canceled_ones_not_at_all(app: TestApp) {
    let due = Utc::now() + chrono::Duration::milliseconds(1_500);
    let workflow = app.publish(wait_until(due)).await;
    let (kept, canceled) = (app.start(&workflow, json!({})).await, app.start(&workflow, json!({})).await);
    // Both are due within the read-ahead: by now the wheel holds them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answer = app.post(&format!("/api/v1/instances/{canceled}/cancel")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let done = app.wait_finished(&kept).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    let ended = node(&done, "wait").ended_at.expect("the delay ended");
    assert!(ended >= due, "the delay ended at {ended}, before it was due at {due}");
    assert!(ended - due < chrono::Duration::seconds(1), "the held timer fired on time ({ended} for {due})");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let gone = app.instance(&canceled).await;
    assert_eq!(gone.summary.status, InstanceStatus::Canceled);
    assert_ne!(node(&gone, "wait").status, NodeStatus::Succeeded, "a canceled instance's timer did not fire");
    let history = app.get(&format!("/api/v1/instances/{canceled}/history?limit=1000")).send().await.unwrap();
    let history: Value = history.json().await.unwrap();
    let fired = history["items"].as_array().unwrap().iter().any(|e| e["node"] == "wait" && e["status"] == "succeeded");
    assert!(!fired, "{history}");
}

both_backends!(a_held_timer_fires_when_due_and_a_canceled_ones_not_at_all);

/// Two processes, 400 timers due in the same instant: each applied once, by one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_due_at_once_on_two_processes_are_each_applied_once() {
    let (url, _dir) = fresh_database(Backend::Postgres).await;
    let (a, b) = (Process::start(&url, &[]).await, Process::start(&url, &[]).await);
    let (api_a, api_b) = (Api::connect(&a.base).await, Api::connect(&b.base).await);
    let due = Utc::now() + chrono::Duration::seconds(8);
    let workflow = api_a.publish(wait_until(due)).await;
    let ids = start_many(&[&api_a, &api_b], &workflow, 400).await;
    assert!(Utc::now() < due, "every start came before the timers were due");
    let counts = api_b.settle(&workflow, Duration::from_secs(60)).await;
    assert_eq!(counts["succeeded"], 400, "{counts}");
    check_all(&api_a, &ids, due).await;
}

/// kill -9 while the wheel holds every timer of 100 instances: another process applies each
/// once its lease ends, none early, none twice.
async fn kill_9_with_the_wheel_loaded_loses_no_timer(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let env = [("TRELLIS_LEASE_MS", "1500")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    let due = Utc::now() + chrono::Duration::seconds(4);
    let workflow = api.publish(wait_until(due)).await;
    let ids = start_many(&[&api], &workflow, 100).await;
    // Within the read-ahead of the due instant, and before it: the wheel holds them all.
    let until_held = due - Utc::now() - chrono::Duration::milliseconds(700);
    tokio::time::sleep(until_held.to_std().expect("the starts took less than 3 s")).await;
    assert_eq!(held_timers(backend, &url).await, 100, "the wheel holds every timer");
    first.kill_hard().await;

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    let counts = api.settle(&workflow, Duration::from_secs(60)).await;
    assert_eq!(counts["succeeded"], 100, "every timer was applied after the kill: {counts}");
    check_all(&api, &ids, due).await;
}

on_both!(kill_9_with_the_wheel_loaded_loses_no_timer);

/// Delay timers leased by some process (held in its wheel), read from the database.
async fn held_timers(backend: Backend, url: &str) -> i64 {
    count_in(backend, url, "SELECT COUNT(*) FROM work WHERE kind = 'resume' AND lease_owner IS NOT NULL").await
}
