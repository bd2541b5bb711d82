//! The approvals inbox at 1,000 open approvals (200 with `--quick`): the first page of what
//! waits for me, the first page of everything open, every page walked by cursor, the header's
//! count, and what an approval's page loads (the approval and its run); then how late
//! approvals nobody decides time out. The baseline is the same calls with no approvals,
//! measured in the same run. Timed as a client on loopback sees
//! them, so each figure is an upper bound on the server's time.

use crate::list::time;
use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::percentile;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::time::Duration;

/// Timed calls per query, after one warm-up call.
const SAMPLES: usize = 30;
const PAGE: usize = 50;

pub async fn inbox(api: &Api, open: usize, out: &mut Figures) -> Result<()> {
    let queries =
        [("mine", "/api/v1/approvals?mine=true&limit=50"), ("open", "/api/v1/approvals?status=open&limit=50")];
    for (name, path) in queries {
        out.insert(format!("approvals_empty_{name}_p50_ms"), time(api, path).await?.0);
    }
    let asking = json!({"nodes": [{"id": "ok", "type": "approval", "config": {
        "title": "Refund for run {{ instance.id }}?", "assignees": {"roles": ["operator"]}, "allow_starter": true,
        "form": {"type": "object", "properties": {"reason": {"type": "string"}}}}}]});
    let workflow = api.publish("bench approvals", asking).await?;
    api.start_many(&workflow, open, 16).await?;
    let opened = wait_open(api, open).await?;

    for (name, path) in queries {
        let (p50, p95) = time(api, path).await.with_context(|| format!("the inbox: {name}"))?;
        out.insert(format!("approvals_{name}_p50_ms"), p50);
        out.insert(format!("approvals_{name}_p95_ms"), p95);
    }
    out.insert("approvals_count_p50_ms".into(), time(api, "/api/v1/approvals/count").await?.0);
    let walked = std::time::Instant::now();
    let pages = walk(api).await?;
    out.insert("approvals_walk_all_pages_ms".into(), walked.elapsed().as_secs_f64() * 1000.0);
    out.insert("approvals_pages".into(), pages as f64);
    // What the approval's page asks for: the approval, then its run.
    let instance = opened["instance_id"].as_str().context("instance_id")?;
    let page = [
        format!("/api/v1/approvals/{}", opened["id"].as_str().context("id")?),
        format!("/api/v1/instances/{instance}"),
    ];
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let mut took = Duration::ZERO;
        for path in &page {
            took += api.time_get(path, Some(api.token())).await?;
        }
        samples.push(took.as_secs_f64() * 1000.0);
    }
    out.insert("approval_page_data_p50_ms".into(), percentile(&mut samples, 50.0));
    Ok(())
}

/// `count` approvals with a 1 s `timeout_ms` that nobody decides: how long after its due time
/// each node ended timed out (the durable timer's lateness, as the history records it).
pub async fn timeouts(api: &Api, count: usize, out: &mut Figures) -> Result<()> {
    let asking = json!({"nodes": [{"id": "ok", "type": "approval", "config": {
        "title": "Nobody answers", "assignees": {"roles": ["admin"]}, "timeout_ms": 1000}}]});
    let workflow = api.publish("bench approval timeouts", asking).await?;
    api.start_many(&workflow, count, 16).await?;
    api.drain(&workflow, Duration::from_millis(100)).await?;
    let page = api.get(&format!("/api/v1/approvals?status=closed&limit={count}")).await?;
    let mut late = Vec::with_capacity(count);
    for approval in page["items"].as_array().context("items")?.iter().filter(|a| a["status"] == "timed_out") {
        let due: chrono::DateTime<chrono::Utc> = approval["due_at"].as_str().context("due_at")?.parse()?;
        let run =
            api.get(&format!("/api/v1/instances/{}", approval["instance_id"].as_str().context("instance")?)).await?;
        let node = run["nodes"].as_array().context("nodes")?.iter().find(|n| n["id"] == "ok").context("node ok")?;
        let ended: chrono::DateTime<chrono::Utc> = node["ended_at"].as_str().context("ended_at")?.parse()?;
        late.push((ended - due).num_microseconds().unwrap_or_default() as f64 / 1000.0);
    }
    anyhow::ensure!(late.len() == count, "{} of {count} approvals timed out", late.len());
    out.insert("approval_timeout_late_p50_ms".into(), percentile(&mut late, 50.0));
    out.insert("approval_timeout_late_max_ms".into(), percentile(&mut late, 100.0));
    Ok(())
}

/// Waits until `want` approvals are open; the newest.
async fn wait_open(api: &Api, want: usize) -> Result<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        let count = api.get("/api/v1/approvals/count").await?;
        if count["mine"].as_u64().unwrap_or(0) as usize >= want {
            let page = api.get("/api/v1/approvals?mine=true&limit=1").await?;
            return page["items"].get(0).cloned().context("an open approval");
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "{want} approvals never opened: {count}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Walks every page of what waits for me; how many pages there were.
async fn walk(api: &Api) -> Result<usize> {
    let (mut pages, mut cursor) = (0, None::<String>);
    loop {
        let path = match &cursor {
            Some(after) => format!("/api/v1/approvals?mine=true&limit={PAGE}&cursor={after}"),
            None => format!("/api/v1/approvals?mine=true&limit={PAGE}"),
        };
        let page = api.get(&path).await?;
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(pages),
        }
    }
}
