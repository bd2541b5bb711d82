//! `count` bombs of every kind the sandbox contains — string repetition, concatenation of
//! large strings, list multiplication, constant folding in `validate`, and a script that
//! allocates past the sandbox — while `/healthz` is timed every 20 ms and the server's
//! resident memory is read: before, at its highest, after. Every bomb must fail with the
//! limit's message.

use crate::scenarios::Figures;
use crate::server::{rss_kib_of, Api, Server};
use crate::stats::percentile;
use anyhow::{ensure, Context, Result};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const LIMIT: &str = "exceeded the sandbox memory limit";
/// What folds into 300 MB while it compiles (in the worker: at run time and in `validate`).
const FOLDING: &str = "(('x' * 100000000) ~ ('x' * 100000000) ~ ('x' * 100000000)) | length";

fn transform(expression: &str) -> Value {
    json!({"nodes": [{"id": "bomb", "type": "transform", "config": {"expression": expression}}]})
}

/// Each kind and what its failure must say.
fn kinds() -> Vec<(&'static str, Value, &'static str)> {
    let script = "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);";
    // A billion items walked: no memory, all time. The node's timeout (the engine's durable
    // timer) ends the attempt; the server kills the worker just after it.
    let mut walk = transform("'y' in (['x'] * 1000000000)");
    walk["nodes"][0]["timeout_ms"] = json!(500);
    vec![
        ("repetition", transform("['x' * 100000000, 'x' * 100000000, 'x' * 100000000] | length"), LIMIT),
        ("concatenation", transform(FOLDING), LIMIT),
        ("list_in", walk, "timed out"),
        (
            "quickjs",
            json!({"nodes": [{"id": "bomb", "type": "script",
                "config": {"source": script, "memory_mb": 1024, "timeout_ms": 30000}}]}),
            LIMIT,
        ),
    ]
}

pub async fn bombs(api: &Api, server: &Server, count: usize, out: &mut Figures) -> Result<()> {
    let mut workflows = Vec::new();
    for (kind, definition, message) in kinds() {
        workflows.push((api.publish(&format!("bench sandbox bomb {kind}"), definition).await?, message));
    }
    let draft =
        api.post("/api/v1/workflows", json!({"name": "bench sandbox fold", "definition": {"nodes": []}})).await?;
    let draft = draft["id"].as_str().context("id")?.to_owned();
    let share = count / (workflows.len() + 1);
    let rss_before = server.rss_kib()?;
    let stop = Arc::new(AtomicBool::new(false));
    let pid = server.pid().context("the server has exited")?;
    let watch = tokio::spawn(watch(api.clone(), rss_before, pid, stop.clone()));
    let mut set = tokio::task::JoinSet::new();
    for (workflow, _) in &workflows {
        let (api, workflow) = (api.clone(), workflow.clone());
        set.spawn(async move { api.start_many(&workflow, share, 4).await });
    }
    let folds = tokio::spawn(validate_bombs(api.clone(), draft, share));
    while let Some(done) = set.join_next().await {
        done??;
    }
    for (workflow, message) in &workflows {
        let counts = api.drain(workflow, Duration::from_millis(50)).await?;
        let ended = counts["failed"].as_u64().unwrap_or(0) + counts["timed_out"].as_u64().unwrap_or(0);
        ensure!(ended == share as u64, "every bomb fails: {counts}");
        let failed = api.get(&format!("/api/v1/instances?workflow={workflow}&limit=100")).await?;
        for item in failed["items"].as_array().context("items")? {
            let error = item["error"].as_str().unwrap_or_default();
            ensure!(error.contains(message), "a bomb fails with the limit's message ({message}), not: {error}");
        }
    }
    folds.await??;
    stop.store(true, Ordering::Relaxed);
    let (mut healthz_ms, rss_peak) = watch.await??;
    let rss_after = server.rss_kib()?;
    out.insert("sandbox_bombs".into(), (share * (workflows.len() + 1)) as f64);
    out.insert("sandbox_bombs_rss_before_kib".into(), rss_before as f64);
    out.insert("sandbox_bombs_rss_peak_growth_kib".into(), rss_peak as f64 - rss_before as f64);
    out.insert("sandbox_bombs_rss_after_growth_kib".into(), rss_after as f64 - rss_before as f64);
    out.insert("sandbox_bombs_healthz_p50_ms".into(), percentile(&mut healthz_ms, 50.0));
    out.insert("sandbox_bombs_healthz_p99_ms".into(), percentile(&mut healthz_ms, 99.0));
    out.insert("sandbox_bombs_healthz_max_ms".into(), percentile(&mut healthz_ms, 100.0));
    Ok(())
}

/// `count` validations of a concurrency key that folds to a 400 MB constant: each one is
/// refused naming the limit.
async fn validate_bombs(api: Api, draft: String, count: usize) -> Result<()> {
    let definition = json!({"nodes": [{"id": "n", "type": "noop"}],
        "settings": {"concurrency_key": FOLDING, "max_per_key": 1}});
    for _ in 0..count {
        let report = api.post(&format!("/api/v1/workflows/{draft}/validate"), definition.clone()).await?;
        ensure!(report["valid"] == false && report["errors"].to_string().contains(LIMIT), "{report}");
    }
    Ok(())
}

/// Times `/healthz` every 20 ms and reads the server's RSS until `stop`: the latencies (ms)
/// and the highest RSS seen (KiB).
async fn watch(api: Api, mut peak: u64, pid: u32, stop: Arc<AtomicBool>) -> Result<(Vec<f64>, u64)> {
    let mut latencies = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        latencies.push(api.time_get("/healthz", None).await?.as_secs_f64() * 1e3);
        peak = peak.max(rss_kib_of(pid).unwrap_or(0));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((latencies, peak))
}
