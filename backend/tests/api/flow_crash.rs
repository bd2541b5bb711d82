//! Flow control's state is the database's: a throttle's windows and a debounce's gathering
//! burst survive kill -9 of the process that counted them, and a restarted process goes on
//! from them — no window overfilled, no start dropped, the burst's instance made once — and a
//! shared limit's places hold across it.

use crate::common::{fresh_database, on_both, Backend};
use crate::process::{Api, Process};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::time::Duration;

async fn start(api: &Api, workflow: &str, input: Value) -> Value {
    let (status, started) =
        api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({ "input": input })).await;
    assert_eq!(status, 201, "{started}");
    started
}

async fn throttle_and_debounce_survive_kill_9(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let env = [("TRELLIS_LEASE_MS", "1500")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    let noop = |settings: Value| json!({"nodes": [{"id": "a", "type": "noop"}], "settings": settings});
    let throttled = api.publish(noop(json!({"throttle": {"limit": 5, "period_ms": 1000}}))).await;
    let debounced = api.publish(noop(json!({"debounce": {"period_ms": 1500}}))).await;
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(start(&api, &throttled, json!({ "n": n })).await["id"].as_str().unwrap().to_owned());
    }
    let burst = start(&api, &debounced, json!({"n": 1})).await;
    let again = start(&api, &debounced, json!({"n": 2})).await;
    assert_eq!(burst["id"], again["id"]);
    // A window's worth ran; cut the process off while the rest wait and the burst gathers.
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.kill_hard().await;

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    let counts = api.settle(&throttled, Duration::from_secs(60)).await;
    assert_eq!(counts["succeeded"], 20, "no throttled start dropped: {counts}");
    let mut starts: Vec<DateTime<Utc>> = Vec::new();
    for id in &ids {
        let instance = api.get(&format!("/api/v1/instances/{id}")).await;
        starts.push(instance["started_at"].as_str().unwrap().parse().unwrap());
    }
    starts.sort();
    let second_long = chrono::Duration::milliseconds(1000);
    let busiest = (0..starts.len()).map(|i| starts[i..].iter().take_while(|t| **t - starts[i] < second_long).count());
    assert!(busiest.max().unwrap() <= 5, "a window held more than 5 across the restart: {starts:?}");

    // The burst's id answers as queued while it gathers, then as the instance made from it.
    let id = burst["id"].as_str().unwrap();
    let mut made = api.get(&format!("/api/v1/instances/{id}")).await;
    for _ in 0..300 {
        if made["status"] == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        made = api.get(&format!("/api/v1/instances/{id}")).await;
    }
    let counts = api.settle(&debounced, Duration::from_secs(30)).await;
    assert_eq!((made["status"].as_str(), &made["input"]), (Some("succeeded"), &json!({"n": 2})), "{made}");
    assert_eq!(counts["succeeded"], 1, "the burst made one instance: {counts}");
}

/// A loopback API that counts calls in flight (a call whose connection is cut stops counting)
/// and the most at once; `/block` answers only once `open` is set.
#[derive(Default)]
struct Counted {
    in_flight: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    calls: std::sync::atomic::AtomicUsize,
    open: std::sync::atomic::AtomicBool,
}

struct InFlight(std::sync::Arc<Counted>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

async fn counted_api() -> (String, std::sync::Arc<Counted>) {
    use axum::extract::{Path, State};
    use std::sync::atomic::Ordering::SeqCst;
    let counted = std::sync::Arc::new(Counted::default());
    let answer = |State(c): State<std::sync::Arc<Counted>>, Path(path): Path<String>| async move {
        c.calls.fetch_add(1, SeqCst);
        let now = c.in_flight.fetch_add(1, SeqCst) + 1;
        c.most.fetch_max(now, SeqCst);
        let _guard = InFlight(c.clone());
        while path == "block" && !c.open.load(SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        "{}"
    };
    let app = axum::Router::new().route("/{*path}", axum::routing::any(answer)).with_state(counted.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, counted)
}

/// A shared limit's place is the database's: killed mid-call, the process's place holds until
/// its attempt is judged lost, so the restarted process never runs more than the limit, and
/// everything waiting goes on once the call is made again.
async fn a_shared_limits_places_survive_kill_9(backend: Backend) {
    use std::sync::atomic::Ordering::SeqCst;
    let (url, _dir) = fresh_database(backend).await;
    let (base, counted) = counted_api().await;
    let env = [("TRELLIS_LEASE_MS", "1500")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    let (status, made) = api.post("/api/v1/limits", json!({"name": "one", "concurrency": 1})).await;
    assert_eq!(status, 201, "{made}");
    let calling = |path: &str| json!({"nodes": [{"id": "call", "type": "http", "limit": "one", "config": {"method": "GET", "url": format!("{base}/{path}")}}]});
    let (blocking, quick) = (api.publish(calling("block")).await, api.publish(calling("fast")).await);
    start(&api, &blocking, json!({})).await;
    while counted.calls.load(SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for n in 0..3 {
        start(&api, &quick, json!({ "n": n })).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counted.calls.load(SeqCst), 1, "the others wait for the place");
    first.kill_hard().await;

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    counted.open.store(true, SeqCst);
    assert_eq!(api.settle(&quick, Duration::from_secs(60)).await["succeeded"], 3);
    assert_eq!(api.settle(&blocking, Duration::from_secs(60)).await["succeeded"], 1);
    assert_eq!(counted.most.load(SeqCst), 1, "never two calls at once under a limit of one");
}

on_both!(throttle_and_debounce_survive_kill_9, a_shared_limits_places_survive_kill_9);
