//! Shared limits (`/api/v1/limits`) measured against a loopback API the bench starts: what two
//! workflows calling it under one rate see (its busiest second, its mean rate), how long a 429
//! with `Retry-After: 2` keeps every call under the limit away, and what a limit that does not
//! bind costs a drain of calls beside the same drain with none.

use crate::scenarios::Figures;
use crate::server::Api;
use anyhow::{Context, Result};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The loopback API: when each call arrived; `/busy` answers its first call 429 with
/// `Retry-After: 2`.
#[derive(Default)]
struct Stub {
    arrivals: Mutex<Vec<(Instant, String)>>,
    busy: AtomicUsize,
}

async fn answer(State(stub): State<Arc<Stub>>, Path(path): Path<String>) -> (StatusCode, HeaderMap, &'static str) {
    stub.arrivals.lock().expect("arrivals").push((Instant::now(), path.clone()));
    let mut headers = HeaderMap::new();
    if path == "busy" && stub.busy.fetch_add(1, Ordering::SeqCst) == 0 {
        headers.insert("retry-after", "2".parse().expect("a header value"));
        return (StatusCode::TOO_MANY_REQUESTS, headers, "{}");
    }
    (StatusCode::OK, headers, "{}")
}

async fn stub() -> Result<(String, Arc<Stub>)> {
    let stub = Arc::new(Stub::default());
    let app = Router::new().route("/{*path}", any(answer)).with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((base, stub))
}

fn calling(url: String, limit: Option<&str>) -> Value {
    let mut node = json!({"id": "call", "type": "http", "config": {"method": "GET", "url": url}});
    if let Some(limit) = limit {
        node["limit"] = json!(limit);
    }
    json!({"nodes": [node]})
}

fn times_of(stub: &Stub, path: &str) -> Vec<Instant> {
    stub.arrivals.lock().expect("arrivals").iter().filter(|a| a.1 == path).map(|a| a.0).collect()
}

/// Two workflows, `each` calls apiece, under one limit of `per_s` a second; then the pause.
pub async fn rate_and_pause(api: &Api, per_s: u32, each: usize, out: &mut Figures) -> Result<()> {
    let (base, stub) = stub().await?;
    let name = format!("bench-rate-{}", uuid::Uuid::now_v7().simple());
    api.post("/api/v1/limits", json!({"name": name, "rate": {"limit": per_s, "period_ms": 1000}})).await?;
    let first = api.publish("bench shared limit a", calling(format!("{base}/rated"), Some(&name))).await?;
    let second = api.publish("bench shared limit b", calling(format!("{base}/rated"), Some(&name))).await?;
    let (a, b) = tokio::join!(api.start_many(&first, each, 8), api.start_many(&second, each, 8));
    a?;
    b?;
    api.drain(&first, Duration::from_millis(100)).await?;
    api.drain(&second, Duration::from_millis(100)).await?;
    let times = times_of(&stub, "rated");
    anyhow::ensure!(times.len() == 2 * each, "{} calls of {}", times.len(), 2 * each);
    let busiest = (0..times.len())
        .map(|i| times[i..].iter().take_while(|t| t.duration_since(times[i]) < Duration::from_secs(1)).count())
        .max()
        .unwrap_or(0);
    let span = times.last().context("no calls")?.duration_since(times[0]).as_secs_f64();
    out.insert("shared_rate_target_per_s".into(), f64::from(per_s));
    out.insert("shared_rate_busiest_second".into(), busiest as f64);
    out.insert("shared_rate_mean_per_s".into(), (times.len() - per_s as usize) as f64 / span.max(f64::EPSILON));

    // One call told to wait 2 s: the next call under the limit (another workflow's) comes no sooner.
    let touchy = format!("bench-pause-{}", uuid::Uuid::now_v7().simple());
    api.post("/api/v1/limits", json!({"name": touchy, "concurrency": 100})).await?;
    let busy = api.publish("bench shared limit busy", calling(format!("{base}/busy"), Some(&touchy))).await?;
    let other = api.publish("bench shared limit other", calling(format!("{base}/other"), Some(&touchy))).await?;
    api.start(&busy).await?;
    while times_of(&stub, "busy").is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    api.start(&other).await?;
    api.drain(&busy, Duration::from_millis(50)).await?;
    api.drain(&other, Duration::from_millis(50)).await?;
    let told = times_of(&stub, "busy")[0];
    let next = stub.arrivals.lock().expect("arrivals").iter().filter(|a| a.0 > told).map(|a| a.0).min();
    let gap = next.context("no call after the 429")?.duration_since(told);
    out.insert("shared_pause_gap_ms".into(), gap.as_secs_f64() * 1000.0);
    Ok(())
}

/// Drains of `count` one-call instances: with no limit, then under a limit far above the drain.
pub async fn overhead(api: &Api, count: usize, out: &mut Figures) -> Result<()> {
    let (base, _stub) = stub().await?;
    let loose = format!("bench-loose-{}", uuid::Uuid::now_v7().simple());
    api.post(
        "/api/v1/limits",
        json!({"name": loose, "concurrency": 100_000, "rate": {"limit": 100_000, "period_ms": 1000}}),
    )
    .await?;
    for (label, limit) in [("none", None), ("not_binding", Some(loose.as_str()))] {
        let workflow =
            api.publish(&format!("bench shared drain {label}"), calling(format!("{base}/ok"), limit)).await?;
        let started = Instant::now();
        api.start_many(&workflow, count, 16).await?;
        let counts = api.drain(&workflow, Duration::from_millis(50)).await?;
        anyhow::ensure!(counts["succeeded"].as_u64() == Some(count as u64), "not all succeeded: {counts}");
        out.insert(
            format!("shared_drain_{label}_{count}_instances_per_s"),
            count as f64 / started.elapsed().as_secs_f64(),
        );
    }
    Ok(())
}
