//! Flow control: what limits cost when configured but not binding (a drain beside the same
//! drain with none, in one run), how closely a binding throttle keeps its rate and its
//! windows, and how a debounce folds a burst of starts.

use crate::scenarios::{chain, Figures};
use crate::server::Api;
use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde_json::json;
use std::time::{Duration, Instant};

/// Chain-10 drains of `count` instances: with no flow control, then with a throttle, a rate
/// limit and a priority far above what the drain asks for (every start is still counted).
pub async fn overhead(api: &Api, count: usize, out: &mut Figures) -> Result<()> {
    let loose = json!({
        "throttle": {"limit": 100_000, "period_ms": 1000},
        "rate_limit": {"limit": 100_000, "period_ms": 1000},
        "priority": 3
    });
    for (label, settings) in [("none", json!({})), ("not_binding", loose)] {
        let mut definition = chain(10);
        definition["settings"] = settings;
        let workflow = api.publish(&format!("bench flow drain {label}"), definition).await?;
        let started = Instant::now();
        api.start_many(&workflow, count, 16).await?;
        let counts = api.drain(&workflow, Duration::from_millis(50)).await?;
        anyhow::ensure!(counts["succeeded"].as_u64() == Some(count as u64), "not all succeeded: {counts}");
        out.insert(
            format!("flow_drain_{label}_{count}_instances_per_s"),
            count as f64 / started.elapsed().as_secs_f64(),
        );
    }
    Ok(())
}

/// `count` starts at once of a workflow throttled to `limit` per `period_ms`: the mean rate of
/// admissions against the target, and the most admissions any window of `period_ms` held.
pub async fn throttle(api: &Api, limit: u32, period_ms: i64, count: usize, out: &mut Figures) -> Result<()> {
    let definition = json!({
        "nodes": [{"id": "a", "type": "noop"}],
        "settings": {"throttle": {"limit": limit, "period_ms": period_ms}}
    });
    let workflow = api.publish("bench flow throttle", definition).await?;
    api.start_many(&workflow, count, 16).await?;
    let counts = api.drain(&workflow, Duration::from_millis(100)).await?;
    anyhow::ensure!(counts["succeeded"].as_u64() == Some(count as u64), "dropped some: {counts}");
    let mut starts = started_times(api, &workflow).await?;
    starts.sort();
    let span = (*starts.last().context("no starts")? - starts[0]).num_milliseconds() as f64 / 1000.0;
    let period = chrono::Duration::milliseconds(period_ms);
    let busiest = (0..starts.len()).map(|i| starts[i..].iter().take_while(|t| **t - starts[i] < period).count()).max();
    out.insert("flow_throttle_target_per_s".into(), f64::from(limit) * 1000.0 / period_ms as f64);
    // The first window's admissions go at once; the rate is over the windows after it.
    out.insert("flow_throttle_mean_per_s".into(), (count - limit as usize) as f64 / span.max(f64::EPSILON));
    out.insert("flow_throttle_busiest_window".into(), busiest.unwrap_or(0) as f64);
    out.insert("flow_throttle_limit".into(), f64::from(limit));
    Ok(())
}

/// `starts` starts spread over `keys` keys, 16 in flight, all within one quiet period of a
/// debounce: how many instances they made (one per key is right) and the starts per second.
pub async fn debounce(api: &Api, starts: usize, keys: usize, out: &mut Figures) -> Result<()> {
    let definition = json!({
        "nodes": [{"id": "a", "type": "noop"}],
        "settings": {"debounce": {"period_ms": 3000, "key": "input.k"}}
    });
    let workflow = api.publish("bench flow debounce", definition).await?;
    let began = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for lane in 0..16 {
        let (api, workflow) = (api.clone(), workflow.clone());
        set.spawn(async move {
            for n in (lane..starts).step_by(16) {
                let body = json!({"input": {"k": n % keys, "n": n}});
                api.post(&format!("/api/v1/workflows/{workflow}/instances"), body).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = set.join_next().await {
        done??;
    }
    out.insert("flow_debounce_starts_per_s".into(), starts as f64 / began.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    api.drain(&workflow, Duration::from_millis(100)).await?;
    out.insert("flow_debounce_starts".into(), starts as f64);
    out.insert("flow_debounce_instances".into(), started_times(api, &workflow).await?.len() as f64);
    Ok(())
}

/// When each instance of `workflow` was admitted, read page by page.
async fn started_times(api: &Api, workflow: &str) -> Result<Vec<DateTime<Utc>>> {
    let mut times = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = api.get(&format!("/api/v1/instances?workflow={workflow}&limit=500{cursor}")).await?;
        let items = page["items"].as_array().context("items")?;
        times.extend(
            items.iter().filter_map(|i| i["started_at"].as_str()).filter_map(|t| t.parse::<DateTime<Utc>>().ok()),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return Ok(times),
        }
    }
}
