//! The peers' shapes (`--only peers`): chain-10, fan-out-100 + join and chain-40 of no-op
//! nodes, from the REST start request to the instance's recorded end, beside what the same
//! shapes took on Airflow, Prefect and n8n on this machine class (constants from
//! `../shared/PEERS.md`). The breakdown of where a commit's time goes comes from the server's own
//! phase clock (`/metrics`), read around a drain of chain-10 instances.

use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::percentile;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::time::Duration;

/// A shape and its end-to-end time on the peers, in ms, as `../shared/PEERS.md` gives them:
/// Airflow 3.3.2, Prefect 3.8.8, and n8n 2.41.1 on SQLite and on Postgres (which keeps a run in
/// memory and saves it once, at the end). Trellis is compared with n8n on the same database.
pub struct Peer {
    pub name: &'static str,
    pub airflow_ms: f64,
    pub prefect_ms: f64,
    pub n8n_sqlite_ms: f64,
    pub n8n_postgres_ms: f64,
}

impl Peer {
    /// n8n's time for this shape on `backend` (`sqlite` or `postgres`).
    pub fn n8n_ms(&self, backend: &str) -> f64 {
        if backend == "sqlite" {
            self.n8n_sqlite_ms
        } else {
            self.n8n_postgres_ms
        }
    }
}

pub const PEERS: [Peer; 3] = [
    Peer { name: "chain10", airflow_ms: 10_980.0, prefect_ms: 1_090.0, n8n_sqlite_ms: 16.0, n8n_postgres_ms: 19.0 },
    Peer {
        name: "fanout100_join",
        airflow_ms: 14_560.0,
        prefect_ms: 1_090.0,
        n8n_sqlite_ms: 47.0,
        n8n_postgres_ms: 52.0,
    },
    Peer { name: "chain40", airflow_ms: 42_410.0, prefect_ms: 1_090.0, n8n_sqlite_ms: 19.0, n8n_postgres_ms: 19.0 },
];

fn chain(n: usize) -> Value {
    let nodes: Vec<Value> = (0..n).map(|i| json!({"id": format!("n{i}"), "type": "noop"})).collect();
    let edges: Vec<Value> = (1..n).map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")})).collect();
    json!({"nodes": nodes, "edges": edges})
}

/// `start` → `width` no-ops → `join`.
pub fn fan_out_join(width: usize) -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "noop"}), json!({"id": "join", "type": "noop"})];
    let mut edges = Vec::new();
    for i in 0..width {
        nodes.push(json!({"id": format!("f{i}"), "type": "noop"}));
        edges.push(json!({"from": "start", "to": format!("f{i}")}));
        edges.push(json!({"from": format!("f{i}"), "to": "join"}));
    }
    json!({"nodes": nodes, "edges": edges})
}

/// Each shape `runs` times after one warm-up run: p50 of start request sent → `ended_at`.
pub async fn shapes(api: &Api, backend: &str, runs: usize, out: &mut Figures) -> Result<()> {
    for (peer, definition) in PEERS.iter().zip([chain(10), fan_out_join(100), chain(40)]) {
        let workflow = api.publish(&format!("bench peers {}", peer.name), definition).await?;
        let before = phase_clock(api).await?;
        let p50 = end_to_end_p50(api, &workflow, runs, Duration::from_millis(25)).await?;
        breakdown(&before, &phase_clock(api).await?, &format!("peers_{}_commit", peer.name), out);
        out.insert(format!("peers_{}_p50_ms", peer.name), p50);
        out.insert(format!("peers_{}_n8n_over_trellis", peer.name), peer.n8n_ms(backend) / p50);
    }
    Ok(())
}

/// p50 over `runs` (after one warm-up) of start request sent → recorded end, in ms. The end
/// is read from `ended_at`, so polling slowly (`poll`) costs no precision, only less load.
pub async fn end_to_end_p50(api: &Api, workflow: &str, runs: usize, poll: Duration) -> Result<f64> {
    let mut samples = Vec::with_capacity(runs);
    for run in 0..=runs {
        let sent = chrono::Utc::now();
        let id = api.start(workflow).await?;
        let detail = api.wait_succeeded(&id, poll).await?;
        let ended = chrono::DateTime::parse_from_rfc3339(detail["ended_at"].as_str().context("ended_at")?)?;
        if run > 0 {
            samples.push((ended.with_timezone(&chrono::Utc) - sent).num_microseconds().unwrap_or(0) as f64 / 1e3);
        }
    }
    Ok(percentile(&mut samples, 50.0))
}

/// The server's phase sums and batch counts, from `/metrics`.
pub async fn phase_clock(api: &Api) -> Result<Vec<(String, f64)>> {
    let page = api.metrics().await?;
    let mut read = Vec::new();
    for line in page.lines().filter(|l| l.starts_with("trellis_commit_") || l.starts_with("trellis_engine_")) {
        let Some((name, value)) = line.rsplit_once(' ') else { continue };
        read.push((name.to_owned(), value.parse().unwrap_or(0.0)));
    }
    Ok(read)
}

/// Per transition, in ms: where committing went between two readings of the phase clock;
/// also the mean batch size, and the statements and transactions the engine sent per
/// transition (claims, reads, admissions and starts included).
pub fn breakdown(before: &[(String, f64)], after: &[(String, f64)], prefix: &str, out: &mut Figures) {
    let delta = |name: &str| {
        let at = |read: &[(String, f64)]| read.iter().find(|(n, _)| n == name).map_or(0.0, |(_, v)| *v);
        at(after) - at(before)
    };
    let transitions = delta("trellis_commit_transitions");
    let batches = delta("trellis_commit_batches");
    if transitions <= 0.0 {
        return;
    }
    out.insert(format!("{prefix}_transitions_per_batch"), transitions / batches.max(1.0));
    out.insert(format!("{prefix}_statements_per_transition"), delta("trellis_engine_statements") / transitions);
    out.insert(format!("{prefix}_transactions_per_transition"), delta("trellis_engine_transactions") / transitions);
    for (name, _) in after.iter().filter(|(n, _)| n.starts_with("trellis_commit_phase_seconds")) {
        let phase = name.split('"').nth(1).unwrap_or("?");
        out.insert(format!("{prefix}_ms_per_transition_{phase}"), delta(name) * 1e3 / transitions);
    }
}

/// The peers' figures, once, beside the table (they do not depend on the database).
pub fn print_peers() {
    println!("\n| shape (ms) | Airflow 3.3.2 | Prefect 3.8.8 | n8n 2.41.1, SQLite | n8n 2.41.1, Postgres |");
    println!("|---|---:|---:|---:|---:|");
    for p in &PEERS {
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} |",
            p.name, p.airflow_ms, p.prefect_ms, p.n8n_sqlite_ms, p.n8n_postgres_ms
        );
    }
}
