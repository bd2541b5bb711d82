//! A map survives kill -9: the process running it dies mid-map, the next one finishes it
//! without running again any item whose end was recorded (only those in flight run twice).

use crate::common::{fresh_database, Backend};
use crate::ledger;
use crate::process::{Api, Process};
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;
use trellis_model::NodeStatus;

const ITEMS: usize = 40;
const MAX_PARALLEL: usize = 4;

async fn kill_mid_map(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let (ledger_addr, ledger) = ledger::start().await;
    let env = [("TRELLIS_LEASE_MS", "1500")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    let workflow = api
        .publish(json!({"nodes": [{"id": "each", "type": "map", "config": {
            "items": "input.orders", "max_parallel": MAX_PARALLEL,
            "node": {"type": "http", "config": {"method": "POST", "url": format!("http://{ledger_addr}/slow/{{{{ index }}}}")}}
        }}]}))
        .await;
    let orders: Vec<usize> = (0..ITEMS).collect();
    let (status, started) =
        api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": {"orders": orders}})).await;
    assert_eq!(status, 201);
    let id = started["id"].as_str().unwrap().to_owned();
    // 40 items of 300 ms, 4 at a time: about 3 s. Cut the process off a third of the way in.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    first.kill_hard().await;
    let called_before = calls_so_far(&ledger).await;
    assert!(called_before > 0 && called_before < ITEMS, "the kill landed mid-map ({called_before} calls)");
    // What the dead process had recorded as done: none of these may run again.
    let store = trellis::store::connect(&crate::common::db_config(&url)).await.unwrap();
    let rows = store.map_items(id.parse().unwrap(), "each").await.unwrap();
    let recorded: Vec<String> =
        rows.iter().filter(|r| r.status == NodeStatus::Succeeded).map(|r| format!("slow/{}", r.idx)).collect();
    assert!(!recorded.is_empty(), "some items were recorded before the kill");
    drop(store);

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    let counts = api.settle(&workflow, Duration::from_secs(60)).await;
    assert_eq!(counts["succeeded"], 1, "{counts}");
    let instance = api.get(&format!("/api/v1/instances/{id}")).await;
    let results = instance["nodes"][0]["output"]["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), ITEMS);
    assert!(results.iter().all(|r| r["status"] == 200), "{results:?}");

    let mut per_index: HashMap<String, usize> = HashMap::new();
    for call in ledger.calls.lock().unwrap().iter() {
        *per_index.entry(call.path.clone()).or_default() += 1;
    }
    assert_eq!(per_index.len(), ITEMS, "every item ran");
    let twice: Vec<_> = per_index.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.iter().all(|(_, n)| **n == 2), "no item ran three times: {twice:?}");
    for path in &recorded {
        assert_eq!(per_index[path], 1, "{path} was recorded as done before the kill, yet ran again");
    }
}

/// Calls the ledger has seen so far.
async fn calls_so_far(ledger: &ledger::Ledger) -> usize {
    ledger.calls.lock().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_map_reruns_only_the_items_in_flight_on_sqlite() {
    kill_mid_map(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_map_reruns_only_the_items_in_flight_on_postgres() {
    kill_mid_map(Backend::Postgres).await;
}
