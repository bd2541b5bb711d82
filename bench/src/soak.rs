//! A soak (`--only soak`): 8 clients start chain-10 runs as fast as the server answers them,
//! every third one of a chain whose last node fails, each with a 200-byte input, for a while
//! (`--soak-secs`, 60 by default; the review that asked for it ran 480). Reported beside its
//! throughput: the server's resident memory (VmRSS) after 10 s and at the end, its peak
//! (VmHWM), and what the remembered snapshots hold at the end (`trellis_snapshots`,
//! `trellis_snapshot_bytes`).

use crate::scenarios::{chain, chain_of, Figures};
use crate::server::{Api, Server};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;
/// Every `FAILING`th start is of the failing chain.
const FAILING: usize = 3;
/// The input's size, in bytes of JSON.
const INPUT_BYTES: usize = 200;

/// Chain-10 whose last node always fails (no retry).
fn failing_chain10() -> Value {
    let mut definition = chain_of(10, &json!({"type": "noop"}));
    definition["nodes"][9] = json!({"id": "n9", "type": "fail", "config": {"message": "soak"}});
    definition
}

/// A JSON object of `INPUT_BYTES` bytes, different per start.
fn input(n: usize) -> Value {
    let head = json!({"n": n, "pad": ""}).to_string().len();
    json!({"n": n, "pad": "x".repeat(INPUT_BYTES.saturating_sub(head))})
}

pub async fn steady(api: &Api, server: &Server, duration: Duration, out: &mut Figures) -> Result<()> {
    let ok = api.publish("bench soak chain-10", chain(10)).await?;
    let failing = api.publish("bench soak chain-10 failing", failing_chain10()).await?;
    let began = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let (api, ok, failing) = (api.clone(), ok.clone(), failing.clone());
        clients.spawn(async move {
            let mut started = 0;
            while began.elapsed() < duration {
                let n = started * CLIENTS + client;
                let workflow = if n % FAILING == FAILING - 1 { &failing } else { &ok };
                api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": input(n)})).await?;
                started += 1;
            }
            anyhow::Ok(started)
        });
    }
    let pid = server.pid().context("the server has exited")?;
    let mut rss_at_10s = None;
    while !clients.is_empty() && began.elapsed() < duration {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if rss_at_10s.is_none() && began.elapsed() >= Duration::from_secs(10) {
            rss_at_10s = Some(memory(pid)?.0);
        }
    }
    let mut starts = 0;
    while let Some(done) = clients.join_next().await {
        starts += done??;
    }
    let seconds = began.elapsed().as_secs_f64();
    let ended = ended_runs(api, &ok).await? + ended_runs(api, &failing).await?;
    let (rss, peak) = memory(pid)?;
    let metrics = api.metrics().await?;
    out.insert("soak_seconds".into(), seconds);
    out.insert("soak_starts_per_s".into(), starts as f64 / seconds);
    out.insert("soak_runs_ended_per_s".into(), ended as f64 / seconds);
    out.insert("soak_rss_at_10s_mib".into(), rss_at_10s.map_or(f64::NAN, mib));
    out.insert("soak_rss_end_mib".into(), mib(rss));
    out.insert("soak_rss_peak_mib".into(), mib(peak));
    out.insert("soak_snapshots_end".into(), sample(&metrics, "trellis_snapshots")?);
    out.insert("soak_snapshot_mib_end".into(), sample(&metrics, "trellis_snapshot_bytes")? / 1_048_576.0);
    Ok(())
}

/// Runs of `workflow` that ended (succeeded or failed) so far.
async fn ended_runs(api: &Api, workflow: &str) -> Result<u64> {
    let counts = api.get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).await?["counts"].clone();
    Ok(counts["succeeded"].as_u64().unwrap_or(0) + counts["failed"].as_u64().unwrap_or(0))
}

/// The resident memory of process `pid` now and at its peak (VmRSS, VmHWM), in KiB.
fn memory(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<u64> {
        let line = status.lines().find(|l| l.starts_with(name)).with_context(|| format!("no {name}"))?;
        Ok(line.split_whitespace().nth(1).context("a value")?.parse()?)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The value of the sample `name` (no labels) on a `/metrics` page.
fn sample(page: &str, name: &str) -> Result<f64> {
    let prefix = format!("{name} ");
    let line = page.lines().find(|l| l.starts_with(&prefix)).with_context(|| format!("no {name} on /metrics"))?;
    Ok(line[prefix.len()..].trim().parse()?)
}
