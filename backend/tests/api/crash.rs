//! Durability across processes: kill -9 in the middle of 200 instances, and two processes
//! sharing one Postgres under a concurrency limit.

use crate::common::{fresh_database, Backend};
use crate::ledger;
use crate::process::{Api, Process};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

async fn kill_and_recover(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let (ledger_addr, ledger) = ledger::start().await;
    let env = [("TRELLIS_LEASE_MS", "1500")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    let retry = json!({"max_attempts": 10, "backoff_ms": 20, "max_backoff_ms": 200});
    let step = |id: &str| {
        json!({"id": id, "type": "http", "retry": retry,
        "config": {"method": "POST", "url": format!("http://{ledger_addr}/slow/{{{{ instance.id }}}}/{id}")}})
    };
    let workflow = api.publish(json!({
        "nodes": [step("one"), {"id": "pause", "type": "delay", "config": {"duration_ms": 50}}, step("two"), step("three")],
        "edges": [{"from": "one", "to": "pause"}, {"from": "pause", "to": "two"}, {"from": "two", "to": "three"}]
    })).await;
    let mut ids = Vec::new();
    for i in 0..200 {
        let (status, started) =
            api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": {"i": i}})).await;
        assert_eq!(status, 201);
        ids.push(started["id"].as_str().unwrap().to_owned());
    }
    // Let some work be in flight, then cut the process off without warning.
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.kill_hard().await;
    let calls_before_restart = ledger.calls.lock().unwrap().len();

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    let counts = api.settle(&workflow, Duration::from_secs(120)).await;
    assert_eq!(counts["succeeded"], 200, "every instance finished after the restart: {counts}");

    let calls = ledger.calls.lock().unwrap().clone();
    assert!(calls_before_restart < 600, "the kill landed while work was in flight");
    assert!(calls.len() >= 600, "every step ran at least once");
    // Executions are at least once; each attempt carries one key, whoever ran it.
    let mut keys: HashMap<(String, String), HashSet<String>> = HashMap::new();
    for call in &calls {
        let (instance, node) = call.path.trim_start_matches("slow/").split_once('/').unwrap();
        let key = call.idempotency_key.clone().expect("every call carries an Idempotency-Key");
        assert!(key.starts_with(&format!("{instance}:{node}:")), "{key} belongs to {instance}/{node}");
        keys.entry((instance.to_owned(), node.to_owned())).or_default().insert(key);
    }
    for id in &ids {
        let instance = api.get(&format!("/api/v1/instances/{id}")).await;
        for node in instance["nodes"].as_array().unwrap() {
            assert_eq!(node["status"], "succeeded", "{instance}");
            let name = node["id"].as_str().unwrap();
            if name == "pause" {
                continue;
            }
            // Recorded once, by its last attempt: the ledger saw that attempt's key, and no
            // key of an attempt the instance does not know (a lost attempt may have died
            // before it reached the ledger, so earlier keys may be missing).
            let seen = &keys[&(id.clone(), name.to_owned())];
            let attempts = node["attempts"].as_u64().unwrap();
            assert!(seen.contains(&format!("{id}:{name}:{attempts}")), "{id}/{name}: {seen:?}");
            let known: HashSet<String> = (1..=attempts).map(|a| format!("{id}:{name}:{a}")).collect();
            assert!(seen.is_subset(&known), "{id}/{name}: {seen:?} vs {attempts} attempts");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_200_instances_loses_nothing_on_sqlite() {
    kill_and_recover(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_200_instances_loses_nothing_on_postgres() {
    kill_and_recover(Backend::Postgres).await;
}

/// Two processes on one Postgres share the work and never run more instances of a
/// workflow at once than its limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_keep_max_concurrent_instances() {
    let (url, _dir) = fresh_database(Backend::Postgres).await;
    let (ledger_addr, ledger) = ledger::start().await;
    let a = Process::start(&url, &[]).await;
    let b = Process::start(&url, &[]).await;
    let (api_a, api_b) = (Api::connect(&a.base).await, Api::connect(&b.base).await);
    let workflow = api_a.publish(json!({
        "nodes": [{"id": "slow", "type": "http", "config": {"url": format!("http://{ledger_addr}/slow/{{{{ instance.id }}}}")}}],
        "settings": {"max_concurrent_instances": 3}
    })).await;
    for i in 0..30 {
        let api = if i % 2 == 0 { &api_a } else { &api_b };
        let (status, _) = api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({})).await;
        assert_eq!(status, 201);
    }
    let counts = api_b.settle(&workflow, Duration::from_secs(120)).await;
    assert_eq!(counts["succeeded"], 30, "{counts}");
    assert_eq!(ledger.calls.lock().unwrap().len(), 30);
    let peak = ledger.max_in_flight.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak <= 3, "{peak} instances ran at once; the limit is 3");
    assert!(peak >= 2, "the slots were used in parallel (peak {peak})");
}

/// SIGTERM lets the running attempt finish and exits cleanly; nothing is run twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_running_attempts_and_exits_cleanly() {
    let (url, _dir) = fresh_database(Backend::Sqlite).await;
    let (ledger_addr, ledger) = ledger::start().await;
    let mut first = Process::start(&url, &[]).await;
    let api = Api::connect(&first.base).await;
    let workflow = api
        .publish(json!({"nodes": [
        {"id": "slow", "type": "http", "config": {"url": format!("http://{ledger_addr}/slow/{{{{ instance.id }}}}")}},
        {"id": "after", "type": "noop"}], "edges": [{"from": "slow", "to": "after"}]}))
        .await;
    let (_, started) = api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({})).await;
    let id = started["id"].as_str().unwrap().to_owned();
    while ledger.calls.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = first.child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(30), first.child.wait())
        .await
        .expect("exits within the grace period")
        .unwrap();
    assert!(status.success(), "exit status {status}");

    let second = Process::start(&url, &[]).await;
    let api = Api::connect(&second.base).await;
    assert_eq!(api.settle(&workflow, Duration::from_secs(30)).await["succeeded"], 1);
    let instance = api.get(&format!("/api/v1/instances/{id}")).await;
    assert_eq!(instance["nodes"][0]["attempts"], 1, "the drained attempt was recorded, not retried: {instance}");
    assert_eq!(ledger.calls.lock().unwrap().len(), 1);
}

/// A worker that stops heartbeating loses its task: it is handed out again and the first
/// worker's token no longer counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_task_lease_is_handed_to_another_worker() {
    let (url, _dir) = fresh_database(Backend::Sqlite).await;
    let server = Process::start(&url, &[("TRELLIS_LEASE_MS", "1000")]).await;
    let api = Api::connect(&server.base).await;
    let workflow = api.publish(json!({"nodes": [{"id": "job", "type": "task", "config": {"queue": "q"}}]})).await;
    let (_, started) = api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": {"n": 1}})).await;
    let poll = json!({"queue": "q", "worker": "w", "wait_ms": 5000});
    let (status, first) = api.post("/api/v1/tasks/poll", poll.clone()).await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (status, second) = api.post("/api/v1/tasks/poll", poll).await;
    assert_eq!(status, 200, "the expired task is handed out again");
    assert_eq!(second["id"], first["id"]);
    assert_ne!(second["lease_token"], first["lease_token"]);
    let task = first["id"].as_str().unwrap();
    let (status, _) = api
        .post(&format!("/api/v1/tasks/{task}/complete"), json!({"lease_token": first["lease_token"], "output": 1}))
        .await;
    assert_eq!(status, 409, "the first worker's lease is gone");
    let (status, _) = api
        .post(&format!("/api/v1/tasks/{task}/complete"), json!({"lease_token": second["lease_token"], "output": 2}))
        .await;
    assert_eq!(status, 204);
    let id = started["id"].as_str().unwrap();
    let instance = api.get(&format!("/api/v1/instances/{id}")).await;
    assert_eq!(instance["status"], "succeeded");
    assert_eq!(instance["nodes"][0]["output"], 2);
}

/// Reads a `trellis_commit_*` gauge from `/metrics`.
async fn commit_gauge(api: &Api, name: &str) -> f64 {
    let page = api.http.get(format!("{}/metrics", api.base)).bearer_auth(&api.token).send().await.unwrap();
    let page = page.text().await.unwrap();
    let line = page.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name} in {page}"));
    line.rsplit_once(' ').unwrap().1.parse().unwrap()
}

/// Checks one finished instance's history against its rows: entries numbered without gaps,
/// each node recorded as succeeded exactly once, and as many attempt spans opened (and each
/// closed once) as the node row counts attempts. A transition recorded in part would break
/// one of these.
pub(crate) fn check_history(instance: &Value, history: &[Value]) {
    let id = instance["id"].as_str().unwrap();
    let seqs: Vec<i64> = history.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=history.len() as i64).collect::<Vec<_>>(), "{id}: gap-free history");
    for node in instance["nodes"].as_array().unwrap() {
        let name = node["id"].as_str().unwrap();
        assert_eq!(node["status"], "succeeded", "{id}/{name}");
        let successes =
            history.iter().filter(|e| e["event"] == "node" && e["node"] == name && e["status"] == "succeeded").count();
        assert_eq!(successes, 1, "{id}/{name} succeeded once in its history");
        let attempt_spans = |kind: &str| -> Vec<String> {
            history
                .iter()
                .filter(|e| e["event"] == kind && e["attributes"]["trellis.node"] == name)
                .filter(|e| e["attributes"].get("trellis.attempt").is_some())
                .map(|e| e["span_id"].as_str().unwrap().to_owned())
                .collect()
        };
        let (opened, closed) = (attempt_spans("span_start"), attempt_spans("span_end"));
        assert_eq!(opened.len() as u64, node["attempts"].as_u64().unwrap(), "{id}/{name}: a span per attempt");
        let mut sorted = (opened.clone(), closed.clone());
        sorted.0.sort();
        sorted.1.sort();
        assert_eq!(sorted.0, sorted.1, "{id}/{name}: every attempt span closed once");
    }
}

/// kill -9 while transitions are committed in batches of many instances: after a restart every
/// transition of the cut batch was either recorded whole or is redone, never half. A kill can
/// land in the instant when no attempt holds a lease (noops run in microseconds); then there is
/// nothing to redo, so the scenario is run again, up to three times, until one kill cuts off
/// leased work, and that run must show the work redone.
async fn kill_mid_batch(backend: Backend) {
    for _ in 0..3 {
        if kill_mid_batch_once(backend).await {
            return;
        }
    }
    panic!("three kills all landed while no attempt held a lease");
}

/// One kill scenario; returns whether the kill cut off leased attempts (which must then have
/// been run again).
async fn kill_mid_batch_once(backend: Backend) -> bool {
    let (url, _dir) = fresh_database(backend).await;
    let env = [("TRELLIS_LEASE_MS", "1500"), ("TRELLIS_WORKERS", "64")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    let nodes: Vec<Value> = (0..10).map(|i| json!({"id": format!("n{i}"), "type": "noop"})).collect();
    let edges: Vec<Value> = (1..10).map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")})).collect();
    let workflow = api.publish(json!({"nodes": nodes, "edges": edges})).await;
    let path = format!("/api/v1/workflows/{workflow}/instances");
    let starts = (0..300).map(|_| api.post(&path, json!({})));
    let started: Vec<(u16, Value)> = futures_util::future::join_all(starts).await;
    assert!(started.iter().all(|(status, _)| *status == 201));
    let (mut batches, mut transitions) = (0.0, 0.0);
    for _ in 0..500 {
        batches = commit_gauge(&api, "trellis_commit_batches").await;
        transitions = commit_gauge(&api, "trellis_commit_transitions").await;
        if transitions >= 600.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    first.kill_hard().await;
    assert!(transitions > batches, "batches held several transitions ({transitions} in {batches})");
    assert!(transitions < 3_000.0, "the kill landed while work was in flight ({transitions} of 3,000)");
    let leased = leased_attempts(backend, &url).await;

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    let counts = api.settle(&workflow, Duration::from_secs(120)).await;
    assert_eq!(counts["succeeded"], 300, "every instance finished after the restart: {counts}");
    let mut redone = 0;
    for (_, started) in &started {
        let id = started["id"].as_str().unwrap();
        let instance = api.get(&format!("/api/v1/instances/{id}")).await;
        let history = api.get(&format!("/api/v1/instances/{id}/history?limit=5000")).await;
        check_history(&instance, history["items"].as_array().unwrap());
        redone += instance["nodes"].as_array().unwrap().iter().filter(|n| n["attempts"] != 1).count();
    }
    if leased > 0 {
        assert!(redone > 0, "{leased} attempts held a lease at the kill; none was run again");
    }
    leased > 0
}

/// Node attempts that held a lease when the process died, read from its database.
async fn leased_attempts(backend: Backend, url: &str) -> i64 {
    count_in(backend, url, "SELECT COUNT(*) FROM work WHERE kind = 'run' AND lease_owner IS NOT NULL").await
}

/// A `SELECT COUNT(*) …` read straight from a server's database (it may be dead).
pub(crate) async fn count_in(backend: Backend, url: &str, sql: &str) -> i64 {
    match backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(url).await.unwrap();
            sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap()
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_batch_records_each_transition_whole_or_redoes_it_on_sqlite() {
    kill_mid_batch(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_batch_records_each_transition_whole_or_redoes_it_on_postgres() {
    kill_mid_batch(Backend::Postgres).await;
}
