//! One process against two on one Postgres (`--only scale`): the same number of chain-10
//! instances drained by one `trellis serve`, then by two sharing the database, each figure
//! beside the other from the same run; and per process, how its commit time splits between
//! taking the instances' locks (which includes waiting for the other process) and the rest.
//! Then 1 and 3 processes through PgBouncer in transaction mode beside 1 and 3 direct.

use crate::peers;
use crate::scenarios::Figures;
use crate::server::{Api, Server};
use anyhow::Result;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn chain10_limited() -> Value {
    let nodes: Vec<Value> = (0..10).map(|i| json!({"id": format!("n{i}"), "type": "noop"})).collect();
    let edges: Vec<Value> = (1..10).map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")})).collect();
    json!({"nodes": nodes, "edges": edges, "settings": {"max_concurrent_instances": 100}})
}

/// The limit `chain10_limited` sets.
const LIMIT: i64 = 100;

/// Starts `count` instances through `apis` (16 clients in all, split between them) and waits
/// for all of them to finish; returns transitions per second and the most instances seen
/// running at once (sampled every 50 ms while starting and draining).
async fn drain_through(apis: &[&Api], name: &str, count: usize) -> Result<(f64, i64)> {
    let workflow = apis[0].publish(name, chain10_limited()).await?;
    let started = Instant::now();
    let share = count / apis.len();
    let starts =
        futures_util::future::join_all(apis.iter().map(|api| api.start_many(&workflow, share, 16 / apis.len())));
    let watch = async {
        let mut peak = 0;
        loop {
            let counts =
                apis[0].get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).await?["counts"].clone();
            let running = counts["running"].as_i64().unwrap_or(0);
            peak = peak.max(running);
            if counts["succeeded"].as_u64() == Some((share * apis.len()) as u64) {
                return anyhow::Ok(peak);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let (outcomes, peak) = tokio::join!(starts, watch);
    for outcome in outcomes {
        outcome?;
    }
    Ok(((share * apis.len() * 10) as f64 / started.elapsed().as_secs_f64(), peak?))
}

/// Lock phase and the other phases' seconds, per transition, between two clock readings.
fn lock_share(before: &[(String, f64)], after: &[(String, f64)]) -> (f64, f64) {
    let mut figures = Figures::new();
    peers::breakdown(before, after, "c", &mut figures);
    let lock = figures.get("c_ms_per_transition_lock").copied().unwrap_or(0.0);
    let all: f64 = figures.iter().filter(|(k, _)| k.starts_with("c_ms_per_transition_")).map(|(_, v)| v).sum();
    (lock, all - lock)
}

pub async fn one_vs_two(binary: &str, url: &str, first: &Api, count: usize, out: &mut Figures) -> Result<()> {
    let (one, peak_one) = drain_through(&[first], "bench scale one process", count).await?;
    out.insert("scale_1_process_transitions_per_s".into(), one);
    let second_server = Server::start(binary, url).await?;
    let second = Api::connect(&second_server).await?;
    let before = (peers::phase_clock(first).await?, peers::phase_clock(&second).await?);
    let (two, peak_two) = drain_through(&[first, &second], "bench scale two processes", count).await?;
    let over_limit = [peak_one, peak_two].iter().filter(|&&peak| peak > LIMIT).count();
    out.insert("scale_limit_violations".into(), over_limit as f64);
    let after = (peers::phase_clock(first).await?, peers::phase_clock(&second).await?);
    out.insert("scale_2_processes_transitions_per_s".into(), two);
    out.insert("scale_ratio_2_over_1".into(), two / one);
    for (k, (b, a)) in [(before.0, after.0), (before.1, after.1)].iter().enumerate() {
        let (lock, rest) = lock_share(b, a);
        out.insert(format!("scale_process{}_lock_ms_per_transition", k + 1), lock);
        out.insert(format!("scale_process{}_other_commit_ms_per_transition", k + 1), rest);
    }
    Ok(())
}

/// `n` more servers on `url` (with `env`), and a client for each.
async fn more_servers(binary: &str, url: &str, env: &[(&str, &str)], n: usize) -> Result<(Vec<Server>, Vec<Api>)> {
    let (mut servers, mut apis) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let server = Server::start_with(binary, url, env).await?;
        apis.push(Api::connect(&server).await?);
        servers.push(server);
    }
    Ok((servers, apis))
}

/// 1 and 3 processes through PgBouncer in transaction mode (`pooler::POOL_SIZE` server
/// connections, LISTEN over the direct URL) beside 1 and 3 straight to Postgres, measured
/// one after the other in the same run.
pub async fn pooled_vs_direct(binary: &str, url: &str, first: &Api, count: usize, out: &mut Figures) -> Result<()> {
    let (direct_one, _) = drain_through(&[first], "bench scale direct 1", count).await?;
    let (servers, apis) = more_servers(binary, url, &[], 2).await?;
    let (direct_three, peak_direct) =
        drain_through(&[first, &apis[0], &apis[1]], "bench scale direct 3", count).await?;
    drop((servers, apis));
    let bouncer = crate::pooler::Bouncer::start(url).await?;
    let pooled = bouncer.url_for(url)?;
    let env = [("TRELLIS_DATABASE_POOLER", "transaction"), ("TRELLIS_DIRECT_DATABASE_URL", url)];
    let (mut servers, mut apis) = more_servers(binary, &pooled, &env, 1).await?;
    let (pooled_one, _) = drain_through(&[&apis[0]], "bench scale pooled 1", count).await?;
    let (more, more_apis) = more_servers(binary, &pooled, &env, 2).await?;
    servers.extend(more);
    apis.extend(more_apis);
    let (pooled_three, peak_pooled) =
        drain_through(&[&apis[0], &apis[1], &apis[2]], "bench scale pooled 3", count).await?;
    out.insert("scale_direct_1_process_transitions_per_s".into(), direct_one);
    out.insert("scale_direct_3_processes_transitions_per_s".into(), direct_three);
    out.insert("scale_pooled_1_process_transitions_per_s".into(), pooled_one);
    out.insert("scale_pooled_3_processes_transitions_per_s".into(), pooled_three);
    out.insert("scale_pooled_over_direct_1".into(), pooled_one / direct_one);
    out.insert("scale_pooled_over_direct_3".into(), pooled_three / direct_three);
    let over_limit = [peak_direct, peak_pooled].iter().filter(|&&peak| peak > LIMIT).count();
    out.insert("scale_pooled_limit_violations".into(), over_limit as f64);
    Ok(())
}
