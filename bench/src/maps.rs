//! The `map` node: 1,000 no-op items (50 at once) end to end, beside a static fan-out of the
//! same width in one instance and beside 1,000 separate instances, in one run; and a map over
//! 10,000 items, with the server's memory while it runs.

use crate::scenarios::Figures;
use crate::server::{Api, Server};
use crate::stats::percentile;
use anyhow::Result;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The widest static fan-out a definition holds: start, 998 branches, join (1,000 nodes).
const FAN_WIDTH: usize = 998;

fn map_over(count: usize, max_parallel: usize) -> Value {
    json!({"nodes": [{"id": "each", "type": "map", "config": {
        "items": format!("range({count})"), "max_parallel": max_parallel,
        "node": {"type": "noop", "config": {}}
    }}]})
}

/// Map of `FAN_WIDTH` items and the fan-out of the same width, alternating; then as many
/// separate one-node instances, started 16 at a time, until all have ended.
pub async fn width(api: &Api, runs: usize, out: &mut Figures) -> Result<()> {
    let map = api.publish("bench map 998", map_over(FAN_WIDTH, 50)).await?;
    let fan = api.publish("bench fan-out 998", crate::peers::fan_out_join(FAN_WIDTH)).await?;
    let (mut mapped, mut fanned) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        mapped.extend(api.instance_time_ms(&map, Duration::from_millis(5)).await?);
        fanned.extend(api.instance_time_ms(&fan, Duration::from_millis(5)).await?);
    }
    let (mapped, fanned) = (percentile(&mut mapped, 50.0), percentile(&mut fanned, 50.0));
    out.insert("map998_p50_ms".into(), mapped);
    out.insert("fanout998_p50_ms".into(), fanned);
    out.insert("map_per_item_us".into(), mapped * 1_000.0 / FAN_WIDTH as f64);
    let single = api.publish("bench one noop", crate::scenarios::chain(1)).await?;
    let began = Instant::now();
    api.start_many(&single, FAN_WIDTH, 16).await?;
    api.drain(&single, Duration::from_millis(5)).await?;
    out.insert("instances998_ms".into(), began.elapsed().as_secs_f64() * 1_000.0);
    Ok(())
}

/// One map over `count` items (50 at once): its time, and the server's resident memory before
/// and at its peak (sampled while it runs).
pub async fn large(api: &Api, server: &Server, count: usize, out: &mut Figures) -> Result<()> {
    let workflow = api.publish(&format!("bench map {count}"), map_over(count, 50)).await?;
    let rss_before = server.rss_kib()?;
    let id = api.start(&workflow).await?;
    let mut peak = rss_before;
    let detail = loop {
        peak = peak.max(server.rss_kib()?);
        let detail = api.get(&format!("/api/v1/instances/{id}")).await?;
        if detail["status"].as_str().is_some_and(|s| s != "running" && s != "queued") {
            break detail;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    anyhow::ensure!(detail["status"] == "succeeded", "the map ended {}", detail["status"]);
    let ms = crate::stats::millis(
        detail["created_at"].as_str().unwrap_or_default(),
        detail["ended_at"].as_str().unwrap_or_default(),
    );
    out.insert(format!("map{count}_ms"), ms.unwrap_or(f64::NAN));
    out.insert(format!("map{count}_rss_growth_kib"), peak.saturating_sub(rss_before) as f64);
    Ok(())
}
