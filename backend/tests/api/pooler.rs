//! Trellis behind PgBouncer in transaction mode: three `trellis serve` processes on one
//! database through the test's own PgBouncer, LISTEN over the direct URL.

use crate::common::fresh_postgres_database;
use crate::ledger;
use crate::pgbouncer::Bouncer;
use crate::process::{Api, Process};
use crate::sse::SseStream;
use serde_json::{json, Value};
use sqlx::Connection;
use std::time::Duration;
use tokio::sync::watch;
use uuid::Uuid;

/// PgBouncer's server connections per database.
const POOL: i64 = 4;

/// A database, PgBouncer in front of it, and `n` processes through it.
struct Cluster {
    direct: String,
    bouncer: Bouncer,
    processes: Vec<Process>,
    apis: Vec<Api>,
}

impl Cluster {
    async fn start(n: usize, extra_env: &[(&str, &str)]) -> Cluster {
        let direct = fresh_postgres_database().await;
        let bouncer = Bouncer::start(POOL as u32).await;
        let pooled = bouncer.url_for(&direct);
        // More connections per process than PgBouncer has for all of them: it multiplexes.
        let mut env = vec![("TRELLIS_DIRECT_DATABASE_URL", direct.as_str()), ("TRELLIS_DB_MAX_CONNECTIONS", "8")];
        env.extend_from_slice(extra_env);
        let mut processes = Vec::new();
        let mut apis = Vec::new();
        for _ in 0..n {
            let process = Process::start(&pooled, &env).await;
            apis.push(Api::connect(&process.base).await);
            processes.push(process);
        }
        Cluster { direct, bouncer, processes, apis }
    }
}

/// What a sampler saw of the database while it ran.
#[derive(Debug, Default, Clone, Copy)]
struct Peaks {
    running: i64,
    connections: i64,
}

/// Samples, every 20 ms from its own direct connection, the instances of `workflow` running
/// and the connections to the database (its own left out), until `stop` is sent.
async fn sample(direct: String, workflow: Uuid, mut stop: watch::Receiver<bool>) -> Peaks {
    let mut conn = sqlx::PgConnection::connect(&direct).await.unwrap();
    let mut peaks = Peaks::default();
    while !*stop.borrow() {
        let (running,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM instances WHERE workflow_id = $1 AND status = 'running'")
                .bind(workflow)
                .fetch_one(&mut conn)
                .await
                .unwrap();
        let (connections,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        peaks.running = peaks.running.max(running);
        peaks.connections = peaks.connections.max(connections);
        let _ = tokio::time::timeout(Duration::from_millis(20), stop.changed()).await;
    }
    peaks
}

/// Ten processes, each with the default pool of 16 connections (160 in all, past Postgres's
/// default `max_connections` of 100), run starts spread over all of them through a pool of
/// four: every one finishes and the database never sees more than the pool plus ten LISTEN
/// connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_processes_behind_pgbouncer_use_no_more_connections_than_its_pool() {
    let cluster = Cluster::start(10, &[("TRELLIS_DB_MAX_CONNECTIONS", "16"), ("TRELLIS_SANDBOX_WORKERS", "1")]).await;
    let workflow = cluster.apis[0].publish(crate::common::chain()).await;
    let (stop, stopped) = watch::channel(false);
    let sampler = tokio::spawn(sample(cluster.direct.clone(), workflow.parse().unwrap(), stopped));
    for i in 0..100 {
        let (status, started) =
            cluster.apis[i % 10].post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": i})).await;
        assert_eq!(status, 201, "{started}");
    }
    let counts = cluster.apis[9].settle(&workflow, Duration::from_secs(120)).await;
    let _ = stop.send(true);
    let peaks = sampler.await.unwrap();
    assert_eq!(counts["succeeded"], 100, "{counts}");
    assert!(peaks.connections <= POOL + 10, "{peaks:?}: more than PgBouncer's {POOL} and ten LISTEN connections");
}

/// Starts spread over three processes all finish, one process is killed -9 in the middle,
/// and the workflow's limit holds across them, as the database shows; the database never
/// sees more connections than PgBouncer's pool plus one LISTEN connection per process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_behind_pgbouncer_keep_the_limit_and_lose_nothing_to_kill_9() {
    let mut cluster = Cluster::start(3, &[("TRELLIS_LEASE_MS", "1500")]).await;
    let (ledger_addr, ledger) = ledger::start().await;
    let retry = json!({"max_attempts": 5, "backoff_ms": 20, "max_backoff_ms": 200});
    let workflow = cluster.apis[0]
        .publish(json!({
            "nodes": [{"id": "slow", "type": "http", "retry": retry,
                       "config": {"url": format!("http://{ledger_addr}/slow/{{{{ instance.id }}}}")}}],
            "settings": {"max_concurrent_instances": 3}
        }))
        .await;
    let (stop, stopped) = watch::channel(false);
    let sampler = tokio::spawn(sample(cluster.direct.clone(), workflow.parse().unwrap(), stopped));
    let mut ids = Vec::new();
    for i in 0..30 {
        let (status, started) =
            cluster.apis[i % 3].post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": i})).await;
        assert_eq!(status, 201, "{started}");
        ids.push(started["id"].as_str().unwrap().to_owned());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.processes.remove(0).kill_hard().await;
    let counts = cluster.apis[1].settle(&workflow, Duration::from_secs(120)).await;
    let _ = stop.send(true);
    let peaks = sampler.await.unwrap();
    assert_eq!(counts["succeeded"], 30, "every start finished after the kill: {counts}");
    for id in &ids {
        let instance = cluster.apis[2].get(&format!("/api/v1/instances/{id}")).await;
        assert_eq!(instance["status"], "succeeded", "{instance}");
    }
    assert!(ledger.calls.lock().unwrap().len() >= 30, "every instance's call ran");
    assert!(peaks.running <= 3, "{} instances ran at once; the limit is 3", peaks.running);
    assert!(peaks.running >= 2, "the slots were used in parallel ({peaks:?})");
    assert!(peaks.connections <= POOL + 3, "{peaks:?}: more than PgBouncer's {POOL} and three LISTEN connections");
    let metrics =
        cluster.apis[1].http.get(format!("{}/metrics", cluster.apis[1].base)).bearer_auth(&cluster.apis[1].token);
    let metrics = metrics.send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("trellis_db_pool_max_connections 8"), "{metrics}");
    let acquires = metrics.lines().find_map(|l| l.strip_prefix("trellis_db_pool_acquires ")).expect("acquires");
    assert!(acquires.parse::<f64>().unwrap() > 0.0, "{metrics}");
}

/// A workflow that takes a few hundred ms in several steps, started through `api`.
async fn stepwise(api: &Api) -> String {
    let pause = |id: &str| json!({"id": id, "type": "delay", "config": {"duration_ms": 150}});
    api.publish(json!({
        "nodes": [pause("a"), {"id": "b", "type": "noop"}, pause("c"), {"id": "d", "type": "noop"}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "d"}]
    }))
    .await
}

/// Follows `instance` on each process's event stream to its end; every stream must see the
/// whole history in order well before the (long) resync period would reread it.
async fn follow_everywhere(apis: &[Api], instance: &str) {
    let mut streams = Vec::new();
    for api in apis {
        let response = api
            .http
            .get(format!("{}/api/v1/instances/{instance}/events", api.base))
            .bearer_auth(&api.token)
            .send()
            .await
            .unwrap();
        streams.push(SseStream::new(response));
    }
    for (n, mut stream) in streams.into_iter().enumerate() {
        let events = tokio::time::timeout(Duration::from_secs(20), stream.rest())
            .await
            .unwrap_or_else(|_| panic!("process {n}'s stream did not follow the run live"));
        let seqs: Vec<i64> = events.iter().map(|e| e.seq()).collect();
        assert_eq!(seqs, (1..=events.len() as i64).collect::<Vec<_>>(), "process {n}: gap-free");
        let last = events.iter().rev().find(|e| e.event == "instance").expect("status entries");
        assert_eq!(last.data["status"], "succeeded", "process {n}: {:?}", last.data);
    }
}

/// A live stream on one process follows a run other processes execute (LISTEN over the
/// direct URL); when the direct connections are cut, they reconnect and streams catch up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_streams_behind_pgbouncer_follow_other_processes_and_survive_a_dropped_listen_connection() {
    let cluster = Cluster::start(3, &[("TRELLIS_SSE_RESYNC_MS", "60000")]).await;
    let workflow = stepwise(&cluster.apis[0]).await;
    for round in 0..2 {
        if round == 1 {
            let mut admin = sqlx::PgConnection::connect(&cluster.direct).await.unwrap();
            let (cut,): (i64,) = sqlx::query_as(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND application_name = 'trellis-listen') AS cut",
            )
            .fetch_one(&mut admin)
            .await
            .unwrap();
            assert_eq!(cut, 3, "one LISTEN connection per process");
            tokio::time::sleep(Duration::from_millis(1_500)).await;
        }
        let (status, started) =
            cluster.apis[round + 1].post(&format!("/api/v1/workflows/{workflow}/instances"), json!({})).await;
        assert_eq!(status, 201, "{started}");
        follow_everywhere(&cluster.apis, started["id"].as_str().unwrap()).await;
    }
}

/// Starts `n` instances of `workflow` through the processes in turn, each retried with its
/// Idempotency-Key after a 503 (which must carry `Retry-After`) until it is accepted, counting
/// the accepted ones on `accepted`; returns the ids and how many 503s there were.
async fn start_through_outages(
    apis: &[Api],
    workflow: &str,
    n: usize,
    accepted: &watch::Sender<usize>,
) -> (Vec<String>, usize) {
    let (mut ids, mut unavailable) = (Vec::new(), 0);
    for i in 0..n {
        let api = &apis[i % apis.len()];
        loop {
            let response = api
                .http
                .post(format!("{}/api/v1/workflows/{workflow}/instances", api.base))
                .bearer_auth(&api.token)
                .header("Idempotency-Key", format!("start-{i}"))
                .json(&json!({"input": i}))
                .send()
                .await
                .unwrap();
            if response.status() == 503 {
                let after = response.headers().get("retry-after").expect("a 503 says when to retry");
                let secs: u64 = after.to_str().unwrap().parse().unwrap();
                assert!(secs >= 1, "Retry-After: {secs}");
                unavailable += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            assert_eq!(response.status(), 201, "start {i}");
            let body: Value = response.json().await.unwrap();
            ids.push(body["id"].as_str().unwrap().to_owned());
            accepted.send_modify(|n| *n += 1);
            break;
        }
    }
    (ids, unavailable)
}

/// PgBouncer restarting while starts arrive and instances run: requests answer 503 with
/// `Retry-After` meanwhile (never hang, never 500), and every accepted start finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbouncer_restarting_under_load_answers_503_and_loses_nothing() {
    let cluster = Cluster::start(2, &[("TRELLIS_DB_ACQUIRE_TIMEOUT_MS", "1000")]).await;
    let Cluster { mut bouncer, apis, processes: _processes, .. } = cluster;
    let workflow = stepwise(&apis[0]).await;
    let (accepted, mut seen) = watch::channel(0usize);
    let restart = tokio::spawn(async move {
        seen.wait_for(|n| *n >= 10).await.unwrap();
        bouncer.restart(Duration::from_secs(1)).await;
        bouncer
    });
    let (ids, unavailable) = start_through_outages(&apis, &workflow, 40, &accepted).await;
    let _bouncer = restart.await.unwrap();
    assert!(unavailable > 0, "the restart landed while starts arrived");
    let counts = apis[1].settle(&workflow, Duration::from_secs(120)).await;
    assert_eq!(counts["succeeded"], 40, "{counts}");
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 40, "one instance per start, retries included");
}

/// Behind a transaction-mode pooler without `TRELLIS_DIRECT_DATABASE_URL`: with migrations
/// pending, the process says what is missing and exits; once they are applied it runs, and
/// streams follow other processes' runs by rereading the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_pgbouncer_without_the_direct_url_trellis_says_what_is_missing_or_polls() {
    let direct = fresh_postgres_database().await;
    let bouncer = Bouncer::start(POOL as u32).await;
    let pooled = bouncer.url_for(&direct);
    let pooler = [("TRELLIS_DATABASE_POOLER", "transaction"), ("TRELLIS_SSE_RESYNC_MS", "300")];
    let said = Process::refused(&pooled, &pooler).await;
    assert!(said.contains("TRELLIS_DIRECT_DATABASE_URL") && said.contains("pending"), "{said}");
    let migrated = tokio::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .arg("migrate")
        .env("DATABASE_URL", &direct)
        .output()
        .await
        .unwrap();
    assert!(migrated.status.success(), "{migrated:?}");
    let (a, b) = (Process::start(&pooled, &pooler).await, Process::start(&pooled, &pooler).await);
    let apis = [Api::connect(&a.base).await, Api::connect(&b.base).await];
    let workflow = stepwise(&apis[0]).await;
    let (status, started) = apis[1].post(&format!("/api/v1/workflows/{workflow}/instances"), json!({})).await;
    assert_eq!(status, 201, "{started}");
    follow_everywhere(&apis, started["id"].as_str().unwrap()).await;
}
