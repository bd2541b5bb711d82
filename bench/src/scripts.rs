//! The `script` node: what an attempt costs over a no-op's, and whether 1,000 scripts that hit
//! their limits (memory, time, stack) leave the server's memory where it was.

use crate::scenarios::chain_of;
use crate::scenarios::Figures;
use crate::server::{Api, Server};
use crate::stats::percentile;
use anyhow::{ensure, Result};
use serde_json::json;
use std::time::Duration;

/// Instance time (created -> ended), p50, of `runs` instances of `workflow` run one at a time.
async fn instance_p50(api: &Api, workflow: &str, runs: usize) -> Result<f64> {
    let mut samples = Vec::new();
    for _ in 0..runs {
        samples.extend(api.instance_time_ms(workflow, Duration::from_millis(2)).await?);
    }
    Ok(percentile(&mut samples, 50.0))
}

/// Chain-10 of trivial scripts against chain-10 of no-ops, alternating in the same run: the
/// difference per node is what a script attempt adds (a fresh QuickJS runtime and context,
/// the prelude, compiling, the JSON in and out, the round trip to a sandbox worker).
pub async fn overhead(api: &Api, runs: usize, out: &mut Figures) -> Result<()> {
    let noops = api.publish("bench chain-10 noop (script baseline)", chain_of(10, &json!({"type": "noop"}))).await?;
    let script = json!({"type": "script", "config": {"source": "return {ok: true};"}});
    let scripts = api.publish("bench chain-10 script", chain_of(10, &script)).await?;
    // Warm-up: the first script finds the sandbox workers' code paths cold.
    instance_p50(api, &scripts, 1).await?;
    let (mut noop_ms, mut script_ms) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        noop_ms.push(instance_p50(api, &noops, 1).await?);
        script_ms.push(instance_p50(api, &scripts, 1).await?);
    }
    let (noop, script) = (percentile(&mut noop_ms, 50.0), percentile(&mut script_ms, 50.0));
    out.insert("script_chain10_p50_ms".into(), script);
    out.insert("script_noop_chain10_p50_ms".into(), noop);
    out.insert("script_overhead_per_attempt_ms".into(), (script - noop) / 10.0);
    Ok(())
}

/// `count` scripts over their limits — a third each out of memory (growing arrays), out of
/// time (an endless loop, 50 ms limit) and out of stack (endless recursion) — in two rounds;
/// the server's resident memory (VmRSS) before, between and after, and a trivial script after.
pub async fn bombs(api: &Api, server: &Server, count: usize, out: &mut Figures) -> Result<()> {
    let kinds = [
        ("memory", json!({"source": "const a = []; for (;;) a.push(new Array(10000).fill(1));"})),
        ("time", json!({"source": "while (true) {}", "timeout_ms": 50})),
        ("stack", json!({"source": "function f(n) { return f(n + 1) + 1; }\nreturn f(0);"})),
    ];
    let after = api
        .publish(
            "bench script after bombs",
            json!({"nodes": [{"id": "s", "type": "script", "config": {"source": "return 1;"}}]}),
        )
        .await?;
    let mut workflows = Vec::new();
    for (kind, config) in &kinds {
        let definition = json!({"nodes": [{"id": "bomb", "type": "script", "config": config}]});
        workflows.push(api.publish(&format!("bench script bomb {kind}"), definition).await?);
    }
    // Warm: the sandbox workers have each run a script before the first reading.
    for _ in 0..4 {
        instance_p50(api, &after, 1).await?;
    }
    let rss_before = server.rss_kib()?;
    // Two rounds of half each: memory the allocator keeps after the first round is reused by
    // the second, so a leak shows as growth between the two readings.
    let share = count / kinds.len() / 2;
    let mut rss_half = 0;
    for round in 0..2 {
        bomb_round(api, &workflows, share).await?;
        if round == 0 {
            rss_half = server.rss_kib()?;
        }
    }
    for workflow in &workflows {
        let counts = api.drain(workflow, Duration::from_millis(100)).await?;
        ensure!(counts["failed"].as_u64() == Some(2 * share as u64), "every bomb fails its attempt: {counts}");
    }
    let rss_after = server.rss_kib()?;
    let still = instance_p50(api, &after, 1).await?;
    out.insert("script_bombs".into(), (2 * share * kinds.len()) as f64);
    out.insert("script_bombs_rss_before_kib".into(), rss_before as f64);
    out.insert("script_bombs_rss_half_kib".into(), rss_half as f64);
    out.insert("script_bombs_rss_second_half_growth_kib".into(), rss_after as f64 - rss_half as f64);
    out.insert("script_bombs_rss_after_kib".into(), rss_after as f64);
    out.insert("script_bombs_rss_growth_kib".into(), rss_after as f64 - rss_before as f64);
    out.insert("script_after_bombs_ms".into(), still);
    Ok(())
}

/// `share` instances of each bomb workflow, started 6 at a time per workflow, all finished.
async fn bomb_round(api: &Api, workflows: &[String], share: usize) -> Result<()> {
    let mut set = tokio::task::JoinSet::new();
    for workflow in workflows {
        let (api, workflow) = (api.clone(), workflow.clone());
        set.spawn(async move { api.start_many(&workflow, share, 6).await });
    }
    while let Some(done) = set.join_next().await {
        done??;
    }
    for workflow in workflows {
        api.drain(workflow, Duration::from_millis(100)).await?;
    }
    Ok(())
}
