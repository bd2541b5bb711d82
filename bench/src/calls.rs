//! Steps that call out: `http` nodes calling a loopback stub the bench starts. A chain of ten
//! calls (`--only peers`, beside the no-op chain-10) and a static fan-out of 998 calls + join
//! (`--only maps`, beside the no-op fan-out). The floor is the stub's own time per call, timed
//! by the bench with a plain client: what a step cannot go below; a call step's cost beyond a
//! no-op step and that floor is printed beside it.

use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::percentile;
use anyhow::Result;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The stub: every GET answers `{}` at once. Returns its base URL.
async fn stub() -> Result<String> {
    let app = Router::new().route("/{*path}", get(|| async { "{}" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

/// The stub's time per call, p50 in ms, over `calls` sequential GETs on a kept-alive connection.
async fn floor_ms(base: &str, calls: usize) -> Result<f64> {
    let client = trellis::http_client::builder().build()?;
    let mut samples = Vec::with_capacity(calls);
    for i in 0..=calls {
        let began = Instant::now();
        client.get(format!("{base}/floor")).send().await?.error_for_status()?.bytes().await?;
        if i > 0 {
            samples.push(began.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(percentile(&mut samples, 50.0))
}

/// An `http` node whose URL is a template, as a real step's usually is: its rendering (in the
/// sandbox) is part of what a step costs.
fn call(id: &str, base: &str) -> Value {
    let url = format!("{base}/{id}?run={{{{ instance.id }}}}");
    json!({"id": id, "type": "http", "config": {"method": "GET", "url": url}})
}

fn http_chain(n: usize, base: &str) -> Value {
    let nodes: Vec<Value> = (0..n).map(|i| call(&format!("c{i}"), base)).collect();
    let edges: Vec<Value> = (1..n).map(|i| json!({"from": format!("c{}", i - 1), "to": format!("c{i}")})).collect();
    json!({"nodes": nodes, "edges": edges})
}

fn http_fan_out(width: usize, base: &str) -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "noop"}), json!({"id": "join", "type": "noop"})];
    let mut edges = Vec::new();
    for i in 0..width {
        let id = format!("c{i}");
        nodes.push(call(&id, base));
        edges.push(json!({"from": "start", "to": id}));
        edges.push(json!({"from": id, "to": "join"}));
    }
    json!({"nodes": nodes, "edges": edges})
}

/// Chain-10 of HTTP calls: p50 end to end, the floor, and a step's cost over a no-op step and it.
pub async fn chain(api: &Api, runs: usize, out: &mut Figures) -> Result<()> {
    let base = stub().await?;
    out.insert("http_floor_ms_per_call".into(), floor_ms(&base, 200).await?);
    let workflow = api.publish("bench http chain10", http_chain(10, &base)).await?;
    let before = crate::peers::phase_clock(api).await?;
    let p50 = crate::peers::end_to_end_p50(api, &workflow, runs, Duration::from_millis(10)).await?;
    crate::peers::breakdown(&before, &crate::peers::phase_clock(api).await?, "http_chain10_commit", out);
    out.insert("http_chain10_p50_ms".into(), p50);
    // What a call step costs beyond a no-op step and the call itself (the no-op chain-10 of
    // the same run carries the start and the end, so they are not spread over the steps).
    if let Some(noop) = out.get("peers_chain10_p50_ms").copied() {
        let floor = out["http_floor_ms_per_call"];
        out.insert("http_chain10_ms_per_step_over_noop_and_floor".into(), (p50 - noop) / 10.0 - floor);
    }
    Ok(())
}

/// A static fan-out of 998 HTTP calls + join: p50 end to end.
pub async fn fan_out(api: &Api, runs: usize, out: &mut Figures) -> Result<()> {
    let base = stub().await?;
    let workflow = api.publish("bench http fan-out 998", http_fan_out(998, &base)).await?;
    // Polled slowly: the detail carries 1,000 outputs, and the end is read from `ended_at`.
    let p50 = crate::peers::end_to_end_p50(api, &workflow, runs, Duration::from_millis(250)).await?;
    out.insert("http_fanout998_p50_ms".into(), p50);
    Ok(())
}
