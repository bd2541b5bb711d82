//! A failure handler starts exactly once across kill -9: the process dies while failed
//! instances' handlers are starting and running; the next one starts each missing handler,
//! and none twice.

use crate::common::{fresh_database, Backend};
use crate::ledger;
use crate::process::{Api, Process};
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;

const INSTANCES: usize = 30;

async fn kill_while_handlers_start(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let (ledger_addr, ledger) = ledger::start().await;
    let env = [("TRELLIS_LEASE_MS", "1500"), ("TRELLIS_WORKERS", "4")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    // Each handler run calls the ledger (300 ms), naming the failed instance.
    let handler = api
        .publish(json!({"nodes": [{"id": "report", "type": "http", "config": {
            "method": "POST", "url": format!("http://{ledger_addr}/slow/{{{{ input.instance.id }}}}")
        }}]}))
        .await;
    let workflow = api
        .publish(json!({
            "nodes": [{"id": "boom", "type": "fail"}],
            "settings": {"on_failure": {"workflow": handler}}
        }))
        .await;
    let mut failed = Vec::new();
    for i in 0..INSTANCES {
        let (status, started) =
            api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": {"i": i}})).await;
        assert_eq!(status, 201);
        failed.push(started["id"].as_str().unwrap().to_owned());
    }
    // 30 handlers of 300 ms, 4 at a time: over 2 s. Cut the process off a third of the way in.
    tokio::time::sleep(Duration::from_millis(900)).await;
    first.kill_hard().await;
    let reported_before = ledger.calls.lock().unwrap().len();
    assert!(reported_before > 0 && reported_before < INSTANCES, "the kill landed mid-way ({reported_before} reports)");

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    let counts = api.settle(&workflow, Duration::from_secs(60)).await;
    assert_eq!(counts["failed"], INSTANCES, "{counts}");
    // Every failed instance gets its handler run, exactly one.
    let mut handler_runs: HashMap<String, usize> = HashMap::new();
    for _ in 0..600 {
        let page = api.get(&format!("/api/v1/instances?workflow={handler}&limit=200")).await;
        let done = page["counts"]["succeeded"].as_u64().unwrap_or(0) as usize;
        if done >= INSTANCES {
            handler_runs.clear();
            for item in page["items"].as_array().unwrap() {
                let run = api.get(&format!("/api/v1/instances/{}", item["id"].as_str().unwrap())).await;
                let of = run["handles_failure_of"]["instance"].as_str().unwrap().to_owned();
                *handler_runs.entry(of).or_default() += 1;
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for id in &failed {
        assert_eq!(handler_runs.get(id), Some(&1), "{id}: {handler_runs:?}");
        // An item the killed process had started its handler for but not consumed is
        // claimed again only when its lease runs out, which may be after every handler ended.
        let mut pending = crate::failure_handlers::pending_items(&url, id).await;
        for _ in 0..200 {
            if pending == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            pending = crate::failure_handlers::pending_items(&url, id).await;
        }
        assert_eq!(pending, 0, "{id}'s on_failure item was consumed");
    }
    // The redone item found the handler it had started: still exactly one per instance.
    let page = api.get(&format!("/api/v1/instances?workflow={handler}&limit=200")).await;
    assert_eq!(page["items"].as_array().unwrap().len(), INSTANCES, "no handler started twice");
    assert_eq!(handler_runs.len(), INSTANCES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_failure_handlers_start_starts_each_once_on_sqlite() {
    kill_while_handlers_start(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_failure_handlers_start_starts_each_once_on_postgres() {
    kill_while_handlers_start(Backend::Postgres).await;
}
