//! A database outage, made real by a TCP proxy between Trellis and Postgres that the test
//! cuts (closing every connection and refusing new ones) and restores: requests that need
//! the database answer 503 with `Retry-After`, `/readyz` answers at once, and an attempt
//! that finished during the outage is recorded as soon as the database is back.

use crate::common::{fresh_postgres_database, TestApp};
use reqwest::StatusCode;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use trellis_model::InstanceStatus;

/// Forwards loopback connections to Postgres while up; when cut, drops every open one
/// and closes new ones at once.
struct Proxy {
    addr: SocketAddr,
    up: watch::Sender<bool>,
}

impl Proxy {
    async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = watch::channel(true);
        let watcher = up.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut state = watcher.subscribe();
                if !*state.borrow() {
                    continue; // dropped: the database is "away"
                }
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(target).await else { return };
                    tokio::select! {
                        _ = copy_bidirectional(&mut client, &mut server) => {}
                        _ = state.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Proxy { addr, up }
    }

    fn cut(&self) {
        self.up.send_replace(false);
    }

    fn restore(&self) {
        self.up.send_replace(true);
    }
}

/// The Postgres server behind `url` and `url` pointed at `proxy` instead.
fn through(url: &str, proxy: SocketAddr) -> (SocketAddr, String) {
    let mut parsed = reqwest::Url::parse(url).unwrap();
    let host = parsed.host_str().unwrap().to_owned();
    let port = parsed.port().unwrap_or(5432);
    let target = format!("{host}:{port}").parse().expect("the test Postgres is addressed by IP");
    parsed.set_port(Some(proxy.port())).unwrap();
    parsed.set_host(Some("127.0.0.1")).unwrap();
    (target, parsed.to_string())
}

/// An HTTP endpoint that answers only when told to, and says when it was called.
async fn held_endpoint() -> (SocketAddr, Arc<Notify>, Arc<Notify>) {
    let (called, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (c, r) = (called.clone(), release.clone());
    let app = axum::Router::new().route(
        "/slow",
        axum::routing::get(move || {
            let (c, r) = (c.clone(), r.clone());
            async move {
                c.notify_one();
                r.notified().await;
                axum::Json(json!({"ok": true}))
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, called, release)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_outage_is_answered_503_and_the_run_goes_on_when_it_returns() {
    let direct = fresh_postgres_database().await;
    let target = through(&direct, "127.0.0.1:1".parse().unwrap()).0;
    let proxy = Proxy::start(target).await;
    let (_, url) = through(&direct, proxy.addr);
    // A lease far longer than the test waits: a result left to the lease would never land.
    let app = TestApp::spawn_on(url, tempfile::tempdir().unwrap(), |serve| serve.lease_ms = 120_000).await;
    let (endpoint, called, release) = held_endpoint().await;
    let wf = app
        .publish(json!({
            "nodes": [
                {"id": "call", "type": "http", "config": {"method": "GET", "url": format!("http://{endpoint}/slow")}},
                {"id": "after", "type": "noop"}
            ],
            "edges": [{"from": "call", "to": "after"}]
        }))
        .await;
    let instance = app.start(&wf, json!({})).await;
    tokio::time::timeout(Duration::from_secs(20), called.notified()).await.expect("the attempt calls out");

    proxy.cut();
    let asked = Instant::now();
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(asked.elapsed() < Duration::from_secs(3), "readyz answers at once, took {:?}", asked.elapsed());
    for request in
        [app.get("/api/v1/workflows"), app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({}))]
    {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE, "requests that need the database");
        assert!(response.headers().contains_key("retry-after"));
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }
    // The attempt ends while the database is away; its commit cannot land yet.
    release.notify_one();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    proxy.restore();

    let back = Instant::now();
    let finished = app.wait_finished(&instance).await;
    assert_eq!(finished.summary.status, InstanceStatus::Succeeded, "{finished:?}");
    assert!(back.elapsed() < Duration::from_secs(25), "recorded when the database returned, not a lease later");
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}

/// Connections killed under the server (as a Postgres restart or a failover does) while
/// requests and runs are in flight: answers are 2xx or 503, never 500, and every run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connections_killed_under_load_never_make_a_500() {
    use sqlx::Connection;
    let direct = fresh_postgres_database().await;
    let database = reqwest::Url::parse(&direct).unwrap().path().trim_start_matches('/').to_owned();
    let app = TestApp::spawn_on(direct.clone(), tempfile::tempdir().unwrap(), |_| {}).await;
    let wf = app.publish(crate::common::chain()).await;
    let mut killer = sqlx::PgConnection::connect(&direct).await.unwrap();
    let mut statuses = Vec::new();
    let mut started = Vec::new();
    for _ in 0..10 {
        let requests = (0..8).map(|n| {
            let request = if n % 2 == 0 {
                app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({}))
            } else {
                app.get("/api/v1/instances?limit=5")
            };
            async move {
                let response = request.send().await.unwrap();
                let status = response.status();
                (status, response.json::<serde_json::Value>().await.unwrap_or_default())
            }
        });
        let kill = sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(&database)
        .execute(&mut killer);
        let (answers, killed) = tokio::join!(crate::drafts::futures_join_all(requests), kill);
        killed.unwrap();
        for (status, body) in answers {
            if status == StatusCode::CREATED {
                started.push(body["id"].as_str().unwrap().to_owned());
            }
            statuses.push(status);
        }
    }
    let errors: Vec<_> =
        statuses.iter().filter(|s| s.is_server_error() && **s != StatusCode::SERVICE_UNAVAILABLE).collect();
    assert!(errors.is_empty(), "only 503s may come from killed connections: {errors:?}");
    assert!(!started.is_empty());
    for id in started {
        assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
    }
}
