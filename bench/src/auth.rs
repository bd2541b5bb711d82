//! What authenticating a request costs: the same cheap route (`GET /api/v1/auth/me`) with a
//! session token and with an API key, beside `/healthz` (no credential, no database) measured
//! in the same run. The difference is the per-request price of checking the credential,
//! including the lookup that makes tokens revocable.

use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::percentile;
use anyhow::{Context, Result};
use serde_json::json;

/// Sequential requests, so the figure is latency, not the server's parallelism.
async fn samples(api: &Api, path: &str, credential: Option<&str>, count: usize) -> Result<Vec<f64>> {
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        samples.push(api.time_get(path, credential).await?.as_secs_f64() * 1e3);
    }
    Ok(samples)
}

pub async fn request_cost(api: &Api, count: usize, out: &mut Figures) -> Result<()> {
    let key = api.post("/api/v1/api-keys", json!({"name": "bench", "role": "viewer"})).await?;
    let key = key["key"].as_str().context("api key")?.to_owned();
    let token = api.token().to_owned();
    // Warm the connection pools on both sides first.
    samples(api, "/api/v1/auth/me", Some(&token), 50).await?;
    let mut floor = samples(api, "/healthz", None, count).await?;
    let mut with_token = samples(api, "/api/v1/auth/me", Some(&token), count).await?;
    let mut with_key = samples(api, "/api/v1/auth/me", Some(&key), count).await?;
    let floor_p50 = percentile(&mut floor, 50.0);
    out.insert("auth_floor_healthz_p50_ms".into(), floor_p50);
    for (name, samples) in [("token", &mut with_token), ("api_key", &mut with_key)] {
        let p50 = percentile(samples, 50.0);
        out.insert(format!("auth_{name}_me_p50_ms"), p50);
        out.insert(format!("auth_{name}_me_p99_ms"), percentile(samples, 99.0));
        out.insert(format!("auth_{name}_cost_over_floor_p50_ms"), p50 - floor_p50);
    }
    Ok(())
}
