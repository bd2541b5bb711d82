//! Data that outlives the machine: a backup taken while runs commit (beside the commit rate with
//! no backup), that backup restored to a serving server, and (from SQLite) the database moved
//! to Postgres with `trellis transfer`, beside `pg_restore` of the same rows. The database is
//! seeded with finished instances carrying ~1 KB inputs: 1,000,000 (about 1 GiB on SQLite),
//! 50,000 with `--quick`.

use crate::db::{Db, SeedRow};
use crate::scenarios::Figures;
use crate::server::{Api, Server};
use anyhow::{bail, Context, Result};
use chrono::{Duration, Utc};
use serde_json::json;
use std::path::Path;
use std::time::Instant;
use tokio::process::Command;

/// How long runs are started for to measure their rate, with and without a backup beside.
const LOAD_WINDOW: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn seed(api: &Api, db: &Db, instances: usize) -> Result<()> {
    let noop = json!({"nodes": [{"id": "n", "type": "noop"}]});
    let workflow: uuid::Uuid = api.publish("bench data", noop).await?.parse()?;
    let now = Utc::now();
    let filler = "x".repeat(900);
    for chunk in (0..instances).collect::<Vec<_>>().chunks(250_000) {
        let rows: Vec<SeedRow> = chunk
            .iter()
            .map(|&i| SeedRow {
                workflow,
                status: "succeeded",
                key: Some(format!("order-{i}")),
                failure: None,
                created_at: now - Duration::milliseconds((instances - i) as i64 * 10),
                input: json!({"order": i, "note": filler}),
            })
            .collect();
        db.seed_instances(&rows).await?;
    }
    Ok(())
}

/// Starts chain-3 runs from 8 clients for `LOAD_WINDOW`; runs per second.
async fn start_rate(api: &Api, workflow: &str) -> Result<f64> {
    let began = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (api, workflow) = (api.clone(), workflow.to_owned());
        clients.spawn(async move {
            let mut started = 0u64;
            while began.elapsed() < LOAD_WINDOW {
                api.start(&workflow).await?;
                started += 1;
            }
            anyhow::Ok(started)
        });
    }
    let mut started = 0;
    while let Some(done) = clients.join_next().await {
        started += done??;
    }
    Ok(started as f64 / began.elapsed().as_secs_f64())
}

pub async fn backup_and_restore(binary: &str, url: &str, api: &Api, dir: &Path, out: &mut Figures) -> Result<()> {
    let chain = json!({"nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "noop"}, {"id": "c", "type": "noop"}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}]});
    let workflow = api.publish("bench data load", chain).await?;
    out.insert("data_runs_per_s_without_backup".into(), start_rate(api, &workflow).await?);
    let file = dir.join("bench.backup");
    let backup = {
        let (binary, url, file) = (binary.to_owned(), url.to_owned(), file.clone());
        tokio::spawn(
            async move { timed(&binary, &url, &["backup", "create", "--to", file.to_str().unwrap_or("")]).await },
        )
    };
    let during = start_rate(api, &workflow).await?;
    let took = backup.await??;
    out.insert("data_runs_per_s_during_backup".into(), during);
    out.insert("data_backup_s".into(), took);
    out.insert("data_backup_mb".into(), std::fs::metadata(&file)?.len() as f64 / 1e6);
    out.insert("data_verify_s".into(), timed(binary, url, &["backup", "verify", file.to_str().unwrap_or("")]).await?);

    let target = match url.starts_with("postgres") {
        true => crate::fresh_postgres(&admin_of(url)).await?,
        false => format!("sqlite://{}", dir.join("restored").join("trellis.db").display()),
    };
    let began = Instant::now();
    timed(binary, &target, &["restore", file.to_str().unwrap_or("")]).await?;
    if !url.starts_with("postgres") {
        std::fs::copy(dir.join("master.key"), dir.join("restored").join("master.key"))?;
    }
    let restored = Server::start(binary, &target).await?;
    // Serving: the admin signs in, which reads the restored database.
    Api::connect(&restored).await.context("signing in to the restored server")?;
    out.insert("data_restore_to_serving_s".into(), began.elapsed().as_secs_f64());
    Ok(())
}

/// SQLite → Postgres with `trellis transfer`, and `pg_restore` of the result into another database.
pub async fn transfer(binary: &str, url: &str, admin_url: &str, out: &mut Figures) -> Result<()> {
    let target = crate::fresh_postgres(admin_url).await?;
    let began = Instant::now();
    let report = run(binary, url, &["transfer", "--from", url, "--to", &target, "-o", "json"]).await?;
    let seconds = began.elapsed().as_secs_f64();
    let report: serde_json::Value = serde_json::from_slice(&report).context("the transfer's report")?;
    let rows = report["rows"].as_f64().unwrap_or(0.0);
    out.insert("data_transfer_s".into(), seconds);
    out.insert("data_transfer_rows_per_s".into(), rows / seconds);

    let dump = std::env::temp_dir().join(format!("trellis-bench-{}.dump", uuid::Uuid::new_v4().simple()));
    let dumped = Command::new("pg_dump").args(["-Fc", "-f"]).arg(&dump).arg(&target).status().await?;
    if !dumped.success() {
        bail!("pg_dump failed");
    }
    let copy = crate::fresh_postgres(admin_url).await?;
    let began = Instant::now();
    let restored = Command::new("pg_restore").args(["--no-owner", "-d", &copy]).arg(&dump).status().await?;
    let _ = std::fs::remove_file(&dump);
    if !restored.success() {
        bail!("pg_restore failed");
    }
    out.insert("data_pg_restore_s".into(), began.elapsed().as_secs_f64());
    out.insert("data_pg_restore_rows_per_s".into(), rows / began.elapsed().as_secs_f64());
    Ok(())
}

fn admin_of(url: &str) -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| url.to_owned())
}

async fn timed(binary: &str, url: &str, args: &[&str]) -> Result<f64> {
    let began = Instant::now();
    run(binary, url, args).await?;
    Ok(began.elapsed().as_secs_f64())
}

/// Runs `trellis ARGS` on `url`; its stdout.
async fn run(binary: &str, url: &str, args: &[&str]) -> Result<Vec<u8>> {
    let output = Command::new(binary)
        .args(args)
        .env("DATABASE_URL", url)
        .env("TRELLIS_MASTER_KEY", crate::server::BENCH_MASTER_KEY)
        .env("RUST_LOG", "warn")
        .output()
        .await
        .with_context(|| format!("running trellis {}", args.join(" ")))?;
    if !output.status.success() {
        bail!("trellis {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
    }
    Ok(output.stdout)
}
