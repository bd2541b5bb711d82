//! The measured scenarios. Each returns named figures; nothing here asserts a timing.

use crate::db::Db;
use crate::server::{Api, Server};
use crate::stats::{millis, percentile};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub type Figures = BTreeMap<String, f64>;

pub fn chain(n: usize) -> Value {
    chain_of(n, &json!({"type": "noop"}))
}

/// A chain of `n` nodes like `node` (its `id` set per position: n0, n1, ...).
pub fn chain_of(n: usize, node: &Value) -> Value {
    let nodes: Vec<Value> = (0..n)
        .map(|i| {
            let mut node = node.clone();
            node["id"] = json!(format!("n{i}"));
            node
        })
        .collect();
    let edges: Vec<Value> = (1..n).map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")})).collect();
    json!({"nodes": nodes, "edges": edges})
}

/// (a) predecessor end -> successor start, on chain-10 instances run one at a time, of nodes
/// that do not run ahead of their dispatch's commit (a `fail` node that succeeds at once, the
/// engine's stand-in for a call out): each step waits for its predecessor's commit, as a chain
/// of calls out does. (On a chain of no-ops every step is decided and committed in one batch:
/// `peers` times those end to end.)
pub async fn transition_latency(api: &Api, instances: usize, out: &mut Figures) -> Result<()> {
    let committed_apart = json!({"type": "fail", "config": {"fail_attempts": 0}});
    let workflow = api.publish("bench chain-10 latency", chain_of(10, &committed_apart)).await?;
    let mut samples = Vec::new();
    for _ in 0..instances {
        let id = api.start(&workflow).await?;
        let detail = api.wait_succeeded(&id, Duration::from_millis(2)).await?;
        let nodes = detail["nodes"].as_array().context("nodes")?;
        for pair in nodes.windows(2) {
            let (end, start) = (pair[0]["ended_at"].as_str(), pair[1]["started_at"].as_str());
            if let (Some(end), Some(start)) = (end, start) {
                samples.extend(millis(end, start));
            }
        }
    }
    out.insert("transition_p50_ms".into(), percentile(&mut samples, 50.0));
    out.insert("transition_p99_ms".into(), percentile(&mut samples, 99.0));
    Ok(())
}

/// What the figures of a drain of `count` instances are named after.
pub fn drain_name(count: usize, limited: bool) -> String {
    if limited {
        format!("drain_{count}")
    } else {
        format!("drain_unlimited_{count}")
    }
}

/// (b) throughput draining `count` chain-10 instances that queue behind a limit of 100; or,
/// `limited` false, the same drain with no limit (the figures named `drain_unlimited_…`).
pub async fn throughput(api: &Api, count: usize, limited: bool, out: &mut Figures) -> Result<()> {
    let mut definition = chain(10);
    if limited {
        definition["settings"] = json!({"max_concurrent_instances": 100});
    }
    let name = drain_name(count, limited);
    let workflow = api.publish(&format!("bench chain-10 {name}"), definition).await?;
    let started = Instant::now();
    api.start_many(&workflow, count, 16).await?;
    let starting = started.elapsed().as_secs_f64();
    let counts = api.drain(&workflow, Duration::from_millis(50)).await?;
    let elapsed = started.elapsed().as_secs_f64();
    anyhow::ensure!(counts["succeeded"].as_u64() == Some(count as u64), "not all succeeded: {counts}");
    out.insert(format!("{name}_instances_per_s"), count as f64 / elapsed);
    out.insert(format!("{name}_transitions_per_s"), (count * 10) as f64 / elapsed);
    out.insert(format!("{name}_starts_per_s"), count as f64 / starting);
    Ok(())
}

/// (b') starts alone: `count` starts of a workflow whose one node waits for a signal (so
/// nothing runs beside them), 16 requests in flight; `limited`: at most 100 running, the
/// rest queue. Starts per second, REST request to answer.
pub async fn start_burst(api: &Api, count: usize, limited: bool, out: &mut Figures) -> Result<()> {
    let mut definition = json!({"nodes": [{"id": "hold", "type": "wait_signal"}]});
    let name = if limited { "limited" } else { "unlimited" };
    if limited {
        definition["settings"] = json!({"max_concurrent_instances": 100});
    }
    let workflow = api.publish(&format!("bench start burst {name}"), definition).await?;
    let started = Instant::now();
    api.start_many(&workflow, count, 16).await?;
    out.insert(format!("start_burst_{count}_{name}_per_s"), count as f64 / started.elapsed().as_secs_f64());
    Ok(())
}

/// (c) one instance: a start node, 100 parallel nodes, a join; created -> ended.
pub async fn fan_out(api: &Api, runs: usize, out: &mut Figures) -> Result<()> {
    let mut nodes = vec![json!({"id": "start", "type": "noop"}), json!({"id": "join", "type": "noop"})];
    let mut edges = Vec::new();
    for i in 0..100 {
        nodes.push(json!({"id": format!("f{i}"), "type": "noop"}));
        edges.push(json!({"from": "start", "to": format!("f{i}")}));
        edges.push(json!({"from": format!("f{i}"), "to": "join"}));
    }
    let workflow = api.publish("bench fan-out-100", json!({"nodes": nodes, "edges": edges})).await?;
    let mut samples = Vec::new();
    for _ in 0..runs {
        samples.extend(api.instance_time_ms(&workflow, Duration::from_millis(5)).await?);
    }
    out.insert("fanout100_p50_ms".into(), percentile(&mut samples, 50.0));
    Ok(())
}

/// (d) `count` delay timers due in the same instant: lateness; (e) RSS while they wait.
pub async fn timers(api: &Api, server: &Server, db: &Db, count: usize, out: &mut Figures) -> Result<()> {
    let rss_before = server.rss_kib()?;
    // Leave time for every start before the timers come due (~2 ms a start, plus margin).
    let due = chrono::Utc::now() + chrono::Duration::milliseconds(8_000 + 3 * count as i64);
    let definition = json!({"nodes": [{"id": "wait", "type": "delay", "config": {"until": due.to_rfc3339()}}]});
    let workflow = api.publish(&format!("bench timers x{count}"), definition).await?;
    api.start_many(&workflow, count, 16).await?;
    let all_started = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_idle = server.rss_kib()?;
    out.insert("idle_instances".into(), count as f64);
    out.insert(
        "rss_per_idle_instance_bytes".into(),
        (rss_idle.saturating_sub(rss_before) * 1024) as f64 / count as f64,
    );
    out.insert("timers_started_before_due".into(), f64::from(u8::from(all_started < due)));
    // The commit breakdown of the burst alone (the starts' transitions are behind it).
    let before = crate::peers::phase_clock(api).await?;
    api.drain(&workflow, Duration::from_millis(200)).await?;
    crate::peers::breakdown(&before, &crate::peers::phase_clock(api).await?, "timers_burst_commit", out);
    let mut lateness: Vec<f64> = db
        .node_ends("wait")
        .await?
        .into_iter()
        .map(|t| (t - due).num_microseconds().unwrap_or(0) as f64 / 1000.0)
        .collect();
    out.insert("timer_lateness_p50_ms".into(), percentile(&mut lateness, 50.0));
    out.insert("timer_lateness_p99_ms".into(), percentile(&mut lateness, 99.0));
    Ok(())
}

/// (f) A lone timer: one instance whose delay comes due while nothing else runs, `runs` times
/// one after another; how late its node ends after the due instant (goal: within 10 ms).
pub async fn lone_timer(api: &Api, db: &Db, runs: usize, out: &mut Figures) -> Result<()> {
    let mut dues = Vec::with_capacity(runs);
    for k in 0..runs {
        let due = chrono::Utc::now() + chrono::Duration::milliseconds(300);
        let definition = json!({"nodes": [{"id": "lone", "type": "delay", "config": {"until": due.to_rfc3339()}}]});
        let workflow = api.publish(&format!("bench lone timer {k}"), definition).await?;
        api.start(&workflow).await?;
        dues.push(due);
        // Past the due instant and its end, so the next run's timer is again the only one.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut ends = db.node_ends("lone").await?;
    ends.sort();
    anyhow::ensure!(ends.len() == runs, "{} of {runs} lone timers ended", ends.len());
    let mut lateness: Vec<f64> = ends
        .iter()
        .zip(&dues)
        .map(|(end, due)| (*end - *due).num_microseconds().unwrap_or(0) as f64 / 1000.0)
        .collect();
    out.insert("lone_timer_lateness_p50_ms".into(), percentile(&mut lateness, 50.0));
    out.insert("lone_timer_lateness_max_ms".into(), percentile(&mut lateness, 100.0));
    Ok(())
}
