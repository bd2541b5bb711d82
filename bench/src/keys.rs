//! Concurrency keys under a long line: what a start of another key and an admission cost when
//! thousands of instances wait behind one busy key, beside the same with a short line, in one
//! run. Starts and admissions read the waiting keys under the workflow's lock, so this is
//! where a long line would show.

use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::{millis, percentile};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Every instance waits at `hold` for a signal; one per key runs at once.
fn held_per_key() -> Value {
    json!({
        "nodes": [{"id": "hold", "type": "wait_signal"}],
        "settings": {"concurrency_key": "input.k", "max_per_key": 1, "max_concurrent_instances": 100_000}
    })
}

async fn start_keyed(api: &Api, workflow: &str, key: &str) -> Result<String> {
    let started = api.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": {"k": key}})).await?;
    Ok(started["id"].as_str().context("id")?.to_owned())
}

/// The short line (`short` waiting behind one key) and then the long one (`long` waiting):
/// p50 of a start of a fresh key, and of the gap between one instance of the busy key ending
/// and the next starting (the admission), each measured `samples` times.
pub async fn long_line(api: &Api, short: usize, long: usize, samples: usize, out: &mut Figures) -> Result<()> {
    for (label, waiting) in [("short", short), ("long", long)] {
        let workflow = api.publish(&format!("bench keys {label} line"), held_per_key()).await?;
        let mut line = vec![start_keyed(api, &workflow, "busy").await?];
        // The line's head is kept; the rest only need to exist.
        for chunk in 0..waiting.div_ceil(500) {
            let n = 500.min(waiting - chunk * 500);
            let mut set = tokio::task::JoinSet::new();
            for task in 0..8 {
                let (api, workflow) = (api.clone(), workflow.clone());
                let share = n / 8 + usize::from(task < n % 8);
                set.spawn(async move {
                    let mut ids = Vec::new();
                    for _ in 0..share {
                        ids.push(start_keyed(&api, &workflow, "busy").await?);
                    }
                    anyhow::Ok(ids)
                });
            }
            while let Some(ids) = set.join_next().await {
                line.extend(ids??);
            }
        }
        line.sort();
        let mut starts = Vec::new();
        for i in 0..samples {
            let began = Instant::now();
            start_keyed(api, &workflow, &format!("fresh-{i}")).await?;
            starts.push(began.elapsed().as_secs_f64() * 1000.0);
        }
        let mut gaps = admission_gaps(api, &line, samples).await?;
        out.insert(format!("keys_{label}_line_waiting"), (line.len() - 1) as f64);
        out.insert(format!("keys_{label}_line_start_other_key_p50_ms"), percentile(&mut starts, 50.0));
        out.insert(format!("keys_{label}_line_admission_gap_p50_ms"), percentile(&mut gaps, 50.0));
    }
    Ok(())
}

/// Releases the busy key's running instance `samples` times; each gap is from its end to the
/// start of the next in line, both as the server recorded them.
async fn admission_gaps(api: &Api, line: &[String], samples: usize) -> Result<Vec<f64>> {
    let mut gaps = Vec::new();
    for pair in line.windows(2).take(samples) {
        let (running, next) = (&pair[0], &pair[1]);
        api.post(&format!("/api/v1/instances/{running}/signal"), json!({"node": "hold"})).await?;
        let ended = wait_for(api, running, |d| d["ended_at"].is_string()).await?;
        let started = wait_for(api, next, |d| d["started_at"].is_string()).await?;
        gaps.extend(millis(
            ended["ended_at"].as_str().unwrap_or_default(),
            started["started_at"].as_str().unwrap_or_default(),
        ));
    }
    Ok(gaps)
}

async fn wait_for(api: &Api, id: &str, done: impl Fn(&Value) -> bool) -> Result<Value> {
    loop {
        let detail = api.get(&format!("/api/v1/instances/{id}")).await?;
        if done(&detail) {
            return Ok(detail);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
