//! The instances list at 100,000 instances (20,000 with `--quick`): the first page with its status counts, with no
//! filter and with each filter, timed as a client on loopback sees it (so the figure is an
//! upper bound on the server's time). The baseline is the same call on the empty table,
//! measured in the same run.

use crate::db::{Db, SeedRow};
use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::percentile;
use anyhow::{Context, Result};
use chrono::{Duration, Utc};
use serde_json::json;

/// Timed calls per query, after one warm-up call.
const SAMPLES: usize = 30;

/// The status of the `i`th seeded instance: 70 % succeeded, 20 % failed, 5 % canceled and 5 %
/// timed out, interleaved, as in production.
fn status_of(i: usize) -> &'static str {
    match i % 20 {
        0..=13 => "succeeded",
        14..=17 => "failed",
        18 => "canceled",
        _ => "timed_out",
    }
}

pub async fn list_at_scale(api: &Api, db: &Db, instances: usize, out: &mut Figures) -> Result<()> {
    let noop = json!({"nodes": [{"id": "n", "type": "noop"}]});
    out.insert("list_empty_p50_ms".into(), time(api, "/api/v1/instances?limit=50").await?.0);
    // Ten workflows; the last gets one instance in a hundred, to time a rare workflow too.
    let mut workflows = Vec::new();
    for n in 0..10 {
        workflows.push(api.publish(&format!("bench list {n}"), noop.clone()).await?);
    }
    let ids: Vec<uuid::Uuid> = workflows.iter().map(|w| w.parse()).collect::<Result<_, _>>()?;
    let now = Utc::now();
    let span_ms = Duration::days(30).num_milliseconds();
    let rows: Vec<SeedRow> = (0..instances)
        .map(|i| SeedRow {
            workflow: if i % 100 == 0 { ids[9] } else { ids[i % 9] },
            status: status_of(i),
            key: (i % 2 == 0).then(|| format!("order-{i}")),
            failure: (status_of(i) == "failed")
                .then(|| ("n".to_owned(), format!("node `n` failed: timeout after {i} ms"))),
            // Spread evenly over the last 30 days, oldest first.
            created_at: now - Duration::milliseconds(span_ms - span_ms * i as i64 / instances as i64),
            input: order_input(i),
        })
        .collect();
    db.seed_instances(&rows).await?;

    let scale = format!("list_{}k", instances / 1_000);
    let since = (now - Duration::hours(24)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let queries = [
        ("none", String::new()),
        ("workflow", format!("&workflow={}", workflows[0])),
        ("rare_workflow", format!("&workflow={}", workflows[9])),
        ("status", "&status=failed".to_owned()),
        ("statuses", "&status=failed,timed_out".to_owned()),
        ("workflow_status", format!("&workflow={}&status=failed", workflows[0])),
        ("version", "&version=1".to_owned()),
        ("key", format!("&key=order-{}", instances / 2)),
        ("since_24h", format!("&since={}", since.replace('+', "%2B"))),
        // By content: a customer with one instance in a thousand (100 of them, spread over the
        // 30 days), and one of those orders by its nested number.
        ("content_rare", "&input.customer=customer-7".to_owned()),
        ("content_nested", format!("&input.order.id={}", instances / 2 + 7)),
        ("content_with_status", "&input.customer=customer-7&status=failed".to_owned()),
    ];
    for (name, filter) in queries {
        let path = format!("/api/v1/instances?limit=50{filter}");
        let (p50, p95) = time(api, &path).await.with_context(|| format!("listing with {name}"))?;
        out.insert(format!("{scale}_{name}_p50_ms"), p50);
        out.insert(format!("{scale}_{name}_p95_ms"), p95);
    }
    // The dashboard's figures over the same instances: an hour by minute, a day by hour, and
    // the whole 30 days by day (70,000 succeeded instances to rank durations over).
    for (name, since, bucket) in
        [("1h", Duration::hours(1), "minute"), ("24h", Duration::hours(24), "hour"), ("30d", Duration::days(30), "day")]
    {
        let since = (now - since).to_rfc3339_opts(chrono::SecondsFormat::Secs, true).replace('+', "%2B");
        let path = format!("/api/v1/stats/instances?since={since}&bucket={bucket}");
        let (p50, p95) = time(api, &path).await.with_context(|| format!("stats over {name}"))?;
        out.insert(format!("stats_{}k_{name}_p50_ms", instances / 1_000), p50);
        out.insert(format!("stats_{}k_{name}_p95_ms", instances / 1_000), p95);
    }
    // The second page, from the first page's cursor.
    let first = api.get("/api/v1/instances?limit=50").await?;
    let cursor = first["next_cursor"].as_str().context("a next page")?;
    let (p50, _) = time(api, &format!("/api/v1/instances?limit=50&cursor={cursor}")).await?;
    out.insert(format!("{scale}_page2_p50_ms"), p50);
    Ok(())
}

/// The `i`th seeded instance's input: one of 1,000 customers, and an order with its own id.
fn order_input(i: usize) -> serde_json::Value {
    json!({"customer": format!("customer-{}", i % 1_000), "order": {"id": i, "total": (i % 500) as f64 / 4.0}})
}

/// p50 and p95 of `SAMPLES` timed GETs of `path` in milliseconds, after one warm-up call.
pub(crate) async fn time(api: &Api, path: &str) -> Result<(f64, f64)> {
    api.time_get(path, Some(api.token())).await?;
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        samples.push(api.time_get(path, Some(api.token())).await?.as_secs_f64() * 1000.0);
    }
    Ok((percentile(&mut samples, 50.0), percentile(&mut samples, 95.0)))
}
