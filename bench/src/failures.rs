//! Failure triage at 100,000 failed instances (20,000 with `--quick`): `GET /api/v1/failures`
//! over the last 24 hours, which groups them by workflow, failing node and error class in the
//! database. Timed as a client on loopback sees it; the baseline is the same call before
//! seeding, in the same run.

use crate::db::{Db, SeedRow};
use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::percentile;
use anyhow::Result;
use chrono::{Duration, Utc};
use serde_json::json;

const SAMPLES: usize = 20;

/// Error messages the seeded failures vary over: each with a number, so 40 texts fold into
/// these classes.
const ERRORS: [&str; 8] = [
    "timeout after {} ms",
    "upstream answered 503 after {} retries",
    "order {} not found",
    "connection reset by peer (os error {})",
    "rate limited: retry in {} s",
    "invalid payload at byte {}",
    "quota exceeded for account {}",
    "lock held by worker {}",
];

pub async fn failures_at_scale(api: &Api, db: &Db, failures: usize, out: &mut Figures) -> Result<()> {
    out.insert("failures_empty_p50_ms".into(), time(api).await?.0);
    let nodes = json!({"nodes": [{"id": "fetch", "type": "noop"}, {"id": "store", "type": "noop"}],
                       "edges": [{"from": "fetch", "to": "store"}]});
    let mut workflows = Vec::new();
    for n in 0..10 {
        workflows.push(api.publish(&format!("bench failures {n}"), nodes.clone()).await?.parse()?);
    }
    let now = Utc::now();
    let day_ms = Duration::hours(23).num_milliseconds();
    let rows: Vec<SeedRow> = (0..failures)
        .map(|i| {
            let node = if i % 3 == 0 { "store" } else { "fetch" };
            let error = ERRORS[i % ERRORS.len()].replace("{}", &(i % 5_000).to_string());
            SeedRow {
                workflow: workflows[i % workflows.len()],
                status: if i % 10 == 0 { "timed_out" } else { "failed" },
                key: None,
                failure: Some((node.to_owned(), format!("node `{node}` failed: {error}"))),
                created_at: now - Duration::milliseconds(day_ms - day_ms * i as i64 / failures as i64),
                input: serde_json::Value::Null,
            }
        })
        .collect();
    db.seed_instances(&rows).await?;
    let scale = format!("failures_{}k", failures / 1_000);
    let (p50, p95) = time(api).await?;
    out.insert(format!("{scale}_24h_p50_ms"), p50);
    out.insert(format!("{scale}_24h_p95_ms"), p95);
    Ok(())
}

/// p50 and p95 of `SAMPLES` calls of the default range, in milliseconds.
async fn time(api: &Api) -> Result<(f64, f64)> {
    let path = "/api/v1/failures";
    api.time_get(path, Some(api.token())).await?;
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        samples.push(api.time_get(path, Some(api.token())).await?.as_secs_f64() * 1000.0);
    }
    Ok((percentile(&mut samples, 50.0), percentile(&mut samples, 95.0)))
}
