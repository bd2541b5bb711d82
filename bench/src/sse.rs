//! Live event streams: start request to first event, delivery latency with many clients
//! following one instance (beside the same clients on the bare broadcaster of `floor.rs`),
//! and server memory per idle stream. Nothing here asserts a timing.

use crate::floor::Floor;
use crate::scenarios::Figures;
use crate::server::{Api, Server};
use crate::stats::percentile;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};

/// Streams opened at once while connecting many clients (the listen backlog is finite).
const CONNECTING: usize = 128;
const GATES: usize = 5;

#[derive(Debug, Deserialize)]
struct Entry {
    at: DateTime<Utc>,
    event: String,
    /// The history `seq` (none on the floor's entries).
    #[serde(default)]
    seq: i64,
}

/// Reads `data:` lines of a server-sent event stream.
struct Reader {
    response: reqwest::Response,
    buffer: String,
}

impl Reader {
    async fn open(api: &Api, path: &str) -> Result<Reader> {
        Ok(Reader::new(api.stream(path).await?))
    }

    fn new(response: reqwest::Response) -> Reader {
        Reader { response, buffer: String::new() }
    }

    /// The next entry; `None` at the end of the stream.
    async fn next(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                    return Ok(Some(serde_json::from_str(data)?));
                }
                continue;
            }
            match self.response.chunk().await? {
                Some(chunk) => self.buffer.push_str(std::str::from_utf8(&chunk)?),
                None => return Ok(None),
            }
        }
    }
}

fn gates() -> Value {
    let mut nodes: Vec<Value> = (0..GATES).map(|i| json!({"id": format!("g{i}"), "type": "wait_signal"})).collect();
    nodes.push(json!({"id": "end", "type": "noop"}));
    let edges: Vec<Value> = (1..=GATES)
        .map(|i| {
            let to = if i == GATES { "end".to_owned() } else { format!("g{i}") };
            json!({"from": format!("g{}", i - 1), "to": to})
        })
        .collect();
    json!({"nodes": nodes, "edges": edges})
}

/// Start request sent → the new instance's stream delivers its first entry.
pub async fn first_event(api: &Api, runs: usize, out: &mut Figures) -> Result<()> {
    let workflow = api.publish("bench sse first event", json!({"nodes": [{"id": "a", "type": "noop"}]})).await?;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let sent = Instant::now();
        let id = api.start(&workflow).await?;
        let mut reader = Reader::open(api, &format!("/api/v1/instances/{id}/events")).await?;
        reader.next().await?.context("a first entry")?;
        samples.push(sent.elapsed().as_secs_f64() * 1e3);
    }
    out.insert("sse_first_event_p50_ms".into(), percentile(&mut samples, 50.0));
    out.insert("sse_first_event_p99_ms".into(), percentile(&mut samples, 99.0));
    Ok(())
}

/// `clients` streams follow one instance that advances on signals: each live entry's
/// receipt time minus its commit-time stamp, over every client; plus the server's RSS
/// growth per connected, idle stream.
pub async fn delivery(api: &Api, server: &Server, clients: usize, out: &mut Figures) -> Result<()> {
    let (floor_p50, floor_p99) = floor_delivery(clients).await?;
    let figures = follow_signals(api, api, server, clients).await?;
    out.insert(format!("sse_delivery_{clients}_clients_p50_ms"), figures.0);
    out.insert(format!("sse_delivery_{clients}_clients_p99_ms"), figures.1);
    out.insert(format!("sse_floor_delivery_{clients}_clients_p50_ms"), floor_p50);
    out.insert(format!("sse_floor_delivery_{clients}_clients_p99_ms"), floor_p99);
    out.insert(format!("ratio_sse_delivery_{clients}_clients_p99_to_floor"), figures.1 / floor_p99);
    out.insert(format!("sse_rss_per_idle_connection_{clients}_bytes"), figures.2);
    out.insert(format!("sse_history_reads_per_client_live_{clients}"), figures.3);
    Ok(())
}

/// The same audience on the bare broadcaster: delivery p50 and p99 (ms).
async fn floor_delivery(clients: usize) -> Result<(f64, f64)> {
    let floor = Floor::start()?;
    let http = trellis::http_client::builder().pool_max_idle_per_host(64).build()?;
    let url = format!("{}/stream", floor.base);
    let followers = connect(clients, |caught_up, connecting| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let open = async { Ok(Reader::new(http.get(&url).send().await?.error_for_status()?)) };
            follow(open, |entry| entry.event == "ready", caught_up, connecting).await
        }
    })
    .await?;
    for step in 0..GATES {
        floor.step(step);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    floor.finish();
    let mut samples = collect(followers).await?;
    Ok((percentile(&mut samples, 50.0), percentile(&mut samples, 99.0)))
}

/// Like [`delivery`], with the entries written by another process (`producer`) than the one
/// the clients are connected to: the cross-process path (Postgres LISTEN/NOTIFY).
pub async fn delivery_across(
    api: &Api,
    producer: &Api,
    server: &Server,
    clients: usize,
    out: &mut Figures,
) -> Result<()> {
    let (p50, p99, _, _) = follow_signals(api, producer, server, clients).await?;
    out.insert("sse_cross_process_delivery_p50_ms".into(), p50);
    out.insert("sse_cross_process_delivery_p99_ms".into(), p99);
    Ok(())
}

/// Connects `clients` followers through `api`, advances the instance by signals through
/// `signaler`; returns delivery p50 and p99 (ms), RSS bytes per idle stream on `server`, and
/// how often per client a live stream had to read the stored history instead of the hub.
async fn follow_signals(api: &Api, signaler: &Api, server: &Server, clients: usize) -> Result<(f64, f64, f64, f64)> {
    let workflow = api.publish(&format!("bench sse x{clients}"), gates()).await?;
    let id = api.start(&workflow).await?;
    wait_gate(api, &id, "g0").await?;
    // Everything up to here is replayed to each client on connect; only what follows is live.
    let replayed = last_seq(api, &id).await?;
    let rss_before = server.rss_kib()?;
    let path = format!("/api/v1/instances/{id}/events");
    let followers = connect(clients, |caught_up, connecting| {
        let (api, path) = (api.clone(), path.clone());
        async move { follow(Reader::open(&api, &path), move |entry| entry.seq >= replayed, caught_up, connecting).await }
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_idle = server.rss_kib()?;
    let reads_before = api.counter("trellis_sse_history_reads").await?;
    for gate in 0..GATES {
        signaler
            .post(&format!("/api/v1/instances/{id}/signal"), json!({"node": format!("g{gate}"), "payload": {}}))
            .await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut samples = collect(followers).await?;
    let reads = api.counter("trellis_sse_history_reads").await? - reads_before;
    let per_connection = (rss_idle.saturating_sub(rss_before) * 1024) as f64 / clients as f64;
    Ok((percentile(&mut samples, 50.0), percentile(&mut samples, 99.0), per_connection, reads / clients as f64))
}

/// The `seq` of the instance's last history entry.
async fn last_seq(api: &Api, id: &str) -> Result<i64> {
    let history = api.get(&format!("/api/v1/instances/{id}/history?limit=5000")).await?;
    history["items"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|e| e["seq"].as_i64())
        .context("an empty history")
}

type Follower = tokio::task::JoinHandle<Result<Vec<f64>>>;

/// Spawns `clients` followers (`follower(caught_up, connecting)`) and returns once every one
/// has caught up with the stream.
async fn connect<F, Fut>(clients: usize, follower: F) -> Result<Vec<Follower>>
where
    F: Fn(mpsc::Sender<()>, Arc<Semaphore>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<f64>>> + Send + 'static,
{
    let (caught_up, mut ready) = mpsc::channel::<()>(clients);
    let connecting = Arc::new(Semaphore::new(CONNECTING));
    let followers: Vec<Follower> =
        (0..clients).map(|_| tokio::spawn(follower(caught_up.clone(), connecting.clone()))).collect();
    drop(caught_up);
    for _ in 0..clients {
        ready.recv().await.context("a client failed before catching up")?;
    }
    Ok(followers)
}

/// Every live entry's delivery latency, over every follower.
async fn collect(followers: Vec<Follower>) -> Result<Vec<f64>> {
    let mut samples = Vec::new();
    for follower in followers {
        samples.extend(follower.await??);
    }
    if samples.is_empty() {
        bail!("no live entries were received");
    }
    Ok(samples)
}

/// One client: reads until `is_caught_up` (the last replayed entry), reports in, then times
/// every live entry: its receipt minus the `at` stamped when it was written.
async fn follow(
    open: impl std::future::Future<Output = Result<Reader>>,
    is_caught_up: impl Fn(&Entry) -> bool,
    caught_up: mpsc::Sender<()>,
    connecting: Arc<Semaphore>,
) -> Result<Vec<f64>> {
    let mut reader = {
        let _turn = connecting.acquire().await?;
        open.await?
    };
    loop {
        let entry = reader.next().await?.context("the stream ended before it caught up")?;
        if is_caught_up(&entry) {
            break;
        }
    }
    caught_up.send(()).await?;
    let mut samples = Vec::new();
    while let Some(entry) = reader.next().await? {
        let received = Utc::now();
        samples.push((received - entry.at).num_microseconds().unwrap_or(0) as f64 / 1e3);
    }
    Ok(samples)
}

async fn wait_gate(api: &Api, id: &str, gate: &str) -> Result<()> {
    for _ in 0..1_000 {
        let instance = api.get(&format!("/api/v1/instances/{id}")).await?;
        let waiting =
            instance["nodes"].as_array().into_iter().flatten().any(|n| n["id"] == gate && n["status"] == "waiting");
        if waiting {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bail!("gate {gate} never started waiting")
}
