//! `cargo xtask bench`: starts Trellis on loopback, on SQLite and on Postgres, measures it,
//! and prints a markdown table (and writes JSON). Every figure is measured against a
//! baseline taken in the same run on the same database: its single-row commit rate.
//!
//! A full run (not `--quick`) also rewrites the table of current figures that opens
//! BENCHMARKS.md (`current_table`), unless `--no-write-benchmarks` is given.
//!
//! Usage: trellis-bench --bin PATH [--quick] [--backend sqlite|postgres|both] [--only GROUP[,GROUP...] (engine|steps|timers|peers|scale|sse|auth|list|failures|scripts|subworkflows|maps|keys|sandbox|secrets|web|soak|data|flow|brokers|approvals)] [--soak-secs N] [--out DIR] [--no-write-benchmarks]

mod approvals;
mod auth;
mod brokers;
mod calls;
mod current_table;
mod data;
mod db;
mod failures;
mod floor;
mod flow;
mod keys;
mod list;
mod maps;
mod peers;
mod pooler;
mod sandbox;
mod sandbox_bombs;
mod scale;
mod scenarios;
mod scripts;
mod secrets;
mod server;
mod shared_limits;
mod soak;
mod sse;
mod stats;
mod subworkflows;
mod web;

use anyhow::{bail, Context, Result};
use scenarios::Figures;
use serde_json::json;
use std::collections::BTreeMap;

struct Options {
    binary: String,
    quick: bool,
    backends: Vec<&'static str>,
    /// The groups of scenarios to run (`--only engine,peers`: any of [`GROUPS`]), or all of them.
    only: Option<Vec<String>>,
    /// How long the soak runs (`--soak-secs`; 60, or 20 with `--quick`).
    soak_secs: Option<u64>,
    out: std::path::PathBuf,
    postgres: String,
    /// Rewrite BENCHMARKS.md's current figures after a full run (`--no-write-benchmarks`: no).
    write_benchmarks: bool,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let options = parse()?;
    // Taken before the runs: the binaries measured were built from the tree as it is now.
    let run = current_table::run_label();
    // Thousands of event-stream clients need as many sockets.
    rlimit::increase_nofile_limit(u64::MAX)?;
    let mut results: BTreeMap<&str, Figures> = BTreeMap::new();
    for backend in &options.backends {
        eprintln!("bench: {backend}");
        results.insert(backend, run_backend(&options, backend).await.with_context(|| format!("{backend} benchmark"))?);
    }
    print_table(&results);
    if options.runs("peers") {
        peers::print_peers();
    }
    std::fs::create_dir_all(&options.out)?;
    let path = options.out.join("bench.json");
    let report = json!({"quick": options.quick, "taken_at": chrono::Utc::now(), "results": results});
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    eprintln!("bench: wrote {}", path.display());
    write_benchmarks(&options, &results, &run)
}

/// A `--quick` run's sizes differ from a full run's, so its figures are not the current ones.
fn write_benchmarks(options: &Options, results: &BTreeMap<&str, Figures>, run: &str) -> Result<()> {
    if options.quick || !options.write_benchmarks {
        eprintln!("bench: BENCHMARKS.md left as it was (--quick or --no-write-benchmarks)");
        return Ok(());
    }
    let path = current_table::write(results, run)?;
    eprintln!("bench: rewrote the current figures in {}", path.display());
    Ok(())
}

/// The groups `--only` may name: one list, so the usage and the check cannot disagree.
const GROUPS: &[&str] = &[
    "engine",
    "steps",
    "timers",
    "peers",
    "scale",
    "sse",
    "auth",
    "list",
    "failures",
    "scripts",
    "subworkflows",
    "maps",
    "keys",
    "sandbox",
    "secrets",
    "web",
    "soak",
    "data",
    "flow",
    "brokers",
    "approvals",
];

impl Options {
    /// Whether `group`'s scenarios run: every group's do without `--only`.
    fn runs(&self, group: &str) -> bool {
        self.only.as_ref().is_none_or(|only| only.iter().any(|g| g == group))
    }
}

/// The groups a `--only` value names, comma-separated; an unknown one is refused by name.
fn groups(text: &str) -> std::result::Result<Vec<String>, String> {
    let named: Vec<String> = text.split(',').map(str::trim).filter(|g| !g.is_empty()).map(str::to_owned).collect();
    match named.iter().find(|g| !GROUPS.contains(&g.as_str())) {
        Some(unknown) => Err(format!("not `{unknown}`")),
        None if named.is_empty() => Err("name a group".to_owned()),
        None => Ok(named),
    }
}

fn parse() -> Result<Options> {
    let mut options = Options {
        binary: String::new(),
        quick: false,
        backends: vec!["sqlite", "postgres"],
        only: None,
        soak_secs: None,
        out: "bench-results".into(),
        postgres: std::env::var("TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into()),
        write_benchmarks: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin" => options.binary = args.next().context("--bin PATH")?,
            "--quick" => options.quick = true,
            "--only" => {
                let usage = || format!("--only {}[,...]", GROUPS.join("|"));
                options.only =
                    Some(groups(&args.next().with_context(usage)?).map_err(|e| anyhow::anyhow!("{}: {e}", usage()))?);
            }
            "--soak-secs" => options.soak_secs = Some(args.next().context("--soak-secs N")?.parse()?),
            "--out" => options.out = args.next().context("--out DIR")?.into(),
            "--no-write-benchmarks" => options.write_benchmarks = false,
            "--backend" => {
                options.backends = match args.next().as_deref() {
                    Some("sqlite") => vec!["sqlite"],
                    Some("postgres") => vec!["postgres"],
                    Some("both") => vec!["sqlite", "postgres"],
                    other => bail!("--backend sqlite|postgres|both, not {other:?}"),
                }
            }
            other => bail!("unknown argument `{other}`"),
        }
    }
    if options.binary.is_empty() {
        bail!("--bin PATH to the trellis binary is required");
    }
    Ok(options)
}

async fn run_backend(options: &Options, backend: &str) -> Result<Figures> {
    let dir = std::env::temp_dir().join(format!("trellis-bench-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let url = match backend {
        "sqlite" => format!("sqlite://{}", dir.join("bench.db").display()),
        _ => fresh_postgres(&options.postgres).await?,
    };
    // Calls to the loopback APIs the bench starts (shared limits) are let through.
    let server = server::Server::start_with(&options.binary, &url, &[("TRELLIS_HTTP_ALLOW", "127.0.0.0/8")]).await?;
    let api = server::Api::connect(&server).await?;
    let db = db::Db::open(&url).await?;
    let (latency_runs, sizes, fanout_runs, timers) =
        if options.quick { (10, vec![200, 1_000], 3, 1_000) } else { (50, vec![1_000, 10_000], 5, 10_000) };
    let mut figures = Figures::new();
    let runs = |group: &str| options.runs(group);
    progress(backend, "baseline commit rate");
    figures.insert("baseline_commits_per_s".into(), db.commit_rate(if options.quick { 300 } else { 1_000 }).await?);
    if runs("web") && backend == "sqlite" {
        // The database plays no part: once is enough.
        progress(backend, "the web app's cold load, with brotli and uncompressed");
        web::cold_load(&server.base, &mut figures).await?;
    }
    if runs("auth") {
        progress(backend, "authentication cost per request");
        auth::request_cost(&api, if options.quick { 300 } else { 2_000 }, &mut figures).await?;
    }
    if runs("peers") {
        progress(backend, "the peers' shapes: chain-10, fan-out-100 + join, chain-40");
        peers::shapes(&api, backend, if options.quick { 5 } else { 9 }, &mut figures).await?;
        progress(backend, "chain-10 of HTTP calls to a loopback stub, and the stub's own time per call");
        calls::chain(&api, if options.quick { 5 } else { 15 }, &mut figures).await?;
    }
    // The engine group's first scenario; `--only steps` runs it alone.
    if runs("engine") || runs("steps") {
        progress(backend, "transition latency");
        scenarios::transition_latency(&api, latency_runs, &mut figures).await?;
    }
    if runs("engine") {
        // Each size behind the limit, then the largest again with no limit.
        let largest = *sizes.last().unwrap_or(&1_000);
        for (size, limited) in sizes.iter().map(|&size| (size, true)).chain([(largest, false)]) {
            let note = if limited { "" } else { ", no limit" };
            progress(backend, &format!("throughput, {size} instances{note}"));
            let before = peers::phase_clock(&api).await?;
            scenarios::throughput(&api, size, limited, &mut figures).await?;
            let prefix = format!("{}_commit", scenarios::drain_name(size, limited));
            peers::breakdown(&before, &peers::phase_clock(&api).await?, &prefix, &mut figures);
        }
        progress(backend, "fan-out");
        scenarios::fan_out(&api, fanout_runs, &mut figures).await?;
        let burst = if options.quick { 500 } else { 2_000 };
        for limited in [true, false] {
            progress(backend, &format!("{burst} starts, 16 in flight{}", if limited { ", limited" } else { "" }));
            scenarios::start_burst(&api, burst, limited, &mut figures).await?;
        }
    }
    // The engine group's last two scenarios; `--only timers` runs them alone.
    if runs("engine") || runs("timers") {
        progress(backend, "a lone timer");
        scenarios::lone_timer(&api, &db, if options.quick { 3 } else { 9 }, &mut figures).await?;
        progress(backend, &format!("{timers} timers due at once"));
        scenarios::timers(&api, &server, &db, timers, &mut figures).await?;
    }
    if runs("scripts") {
        progress(backend, "script node overhead per attempt");
        scripts::overhead(&api, if options.quick { 5 } else { 30 }, &mut figures).await?;
        let bombs = if options.quick { 30 } else { 1_000 };
        progress(backend, &format!("{bombs} scripts over their limits, and the server's memory"));
        scripts::bombs(&api, &server, bombs, &mut figures).await?;
    }
    if runs("sandbox") {
        progress(backend, "one evaluation in a sandbox worker beside the same in this process");
        sandbox::evaluation(&options.binary, if options.quick { 2_000 } else { 20_000 }, &mut figures).await?;
        progress(backend, "chain-10 of transforms beside chain-10 of no-ops");
        let (runs, drained) = if options.quick { (5, 200) } else { (30, 1_000) };
        sandbox::end_to_end(&api, runs, drained, &mut figures).await?;
        let bombs = if options.quick { 50 } else { 1_000 };
        progress(backend, &format!("{bombs} bombs of every kind, /healthz and the server's memory"));
        sandbox_bombs::bombs(&api, &server, bombs, &mut figures).await?;
    }
    if runs("secrets") && backend == "sqlite" {
        // In this process, no database: once is enough.
        progress(backend, "redaction per node output (1 KB, 100 KB, 1 MB; 10 secrets) beside none");
        secrets::redaction(if options.quick { 30 } else { 200 }, &mut figures);
    }
    if runs("subworkflows") {
        progress(backend, "a sub-workflow chain (3 levels) beside the same nodes inline");
        subworkflows::chain(&api, if options.quick { 5 } else { 30 }, &mut figures).await?;
    }
    if runs("maps") {
        progress(backend, "a map of 998 no-op items beside a static fan-out of 998 and 998 instances");
        maps::width(&api, if options.quick { 3 } else { 7 }, &mut figures).await?;
        progress(backend, "a static fan-out of 998 HTTP calls + join");
        calls::fan_out(&api, if options.quick { 1 } else { 3 }, &mut figures).await?;
        let count = if options.quick { 2_000 } else { 10_000 };
        progress(backend, &format!("a map over {count} items, and the server's memory"));
        maps::large(&api, &server, count, &mut figures).await?;
    }
    if runs("flow") {
        let count = if options.quick { 500 } else { 2_000 };
        progress(backend, &format!("flow control: a drain of {count} with limits not binding, beside none"));
        flow::overhead(&api, count, &mut figures).await?;
        let (limit, starts) = if options.quick { (20, 200) } else { (50, 3_000) };
        progress(backend, &format!("flow control: {starts} starts throttled to {limit} per second"));
        flow::throttle(&api, limit, 1000, starts, &mut figures).await?;
        progress(backend, "flow control: 1,000 starts on 10 keys within one debounce period");
        flow::debounce(&api, 1_000, 10, &mut figures).await?;
        let each = if options.quick { 50 } else { 300 };
        progress(backend, &format!("shared limit: two workflows, {each} calls each, under 20 a second; a 429"));
        shared_limits::rate_and_pause(&api, 20, each, &mut figures).await?;
        progress(backend, &format!("shared limit: a drain of {count} calls under a limit not binding, beside none"));
        shared_limits::overhead(&api, count, &mut figures).await?;
    }
    if runs("brokers") {
        let count = if options.quick { 1_000 } else { 10_000 };
        progress(
            backend,
            &format!("broker triggers: {count} messages each from NATS, AMQP and MQTT, beside REST starts"),
        );
        brokers::throughput(&api, count, &mut figures).await?;
    }
    if runs("approvals") {
        let open = if options.quick { 200 } else { 1_000 };
        progress(backend, &format!("the approvals inbox at {open} open approvals, beside none"));
        approvals::inbox(&api, open, &mut figures).await?;
        approvals::timeouts(&api, 50, &mut figures).await?;
    }
    if runs("keys") {
        let long = if options.quick { 1_000 } else { 10_000 };
        progress(backend, &format!("concurrency keys: 10 and then {long} waiting behind one key"));
        keys::long_line(&api, 10, long, if options.quick { 5 } else { 9 }, &mut figures).await?;
    }
    if runs("scale") && backend == "postgres" {
        let count = if options.quick { 1_000 } else { 10_000 };
        progress(backend, &format!("one process against two, {count} instances"));
        scale::one_vs_two(&options.binary, &url, &api, count, &mut figures).await?;
        progress(backend, &format!("1 and 3 processes through PgBouncer beside the same direct, {count} instances"));
        scale::pooled_vs_direct(&options.binary, &url, &api, count, &mut figures).await?;
    }
    if runs("sse") {
        let (first_event_runs, audiences) =
            if options.quick { (20, vec![200, 1_000]) } else { (100, vec![1_000, 5_000]) };
        progress(backend, "start to first event");
        sse::first_event(&api, first_event_runs, &mut figures).await?;
        for clients in audiences {
            progress(backend, &format!("delivery to {clients} clients (and the floor)"));
            sse::delivery(&api, &server, clients, &mut figures).await?;
        }
        if backend == "postgres" {
            // A second process on the same database writes; clients of the first one read.
            progress(backend, "cross-process delivery");
            let producer = server::Server::start(&options.binary, &url).await?;
            let producer_api = server::Api::connect(&producer).await?;
            sse::delivery_across(&api, &producer_api, &server, 100, &mut figures).await?;
        }
    }
    if runs("list") {
        // Last: the 100,000 seeded instances would weigh on the scenarios above.
        let instances = if options.quick { 20_000 } else { 100_000 };
        progress(backend, &format!("instances list at {instances} instances"));
        list::list_at_scale(&api, &db, instances, &mut figures).await?;
    }
    if runs("failures") {
        let failures = if options.quick { 20_000 } else { 100_000 };
        progress(backend, &format!("failure triage at {failures} failed instances"));
        failures::failures_at_scale(&api, &db, failures, &mut figures).await?;
    }
    if runs("soak") {
        // Last: its runs, started faster than they end, leave a backlog behind.
        let seconds = options.soak_secs.unwrap_or(if options.quick { 20 } else { 60 });
        progress(
            backend,
            &format!("soak: 8 clients starting chain-10 runs (⅓ failing) for {seconds} s, and the server's memory"),
        );
        soak::steady(&api, &server, std::time::Duration::from_secs(seconds), &mut figures).await?;
    }
    if runs("data") {
        // Last: it seeds a million instances.
        let instances = if options.quick { 50_000 } else { 1_000_000 };
        progress(backend, &format!("data: {instances} instances; a backup while runs commit; restored to serving"));
        data::seed(&api, &db, instances).await?;
        data::backup_and_restore(&options.binary, &url, &api, &dir, &mut figures).await?;
        if backend == "sqlite" {
            progress(backend, "data: trellis transfer to Postgres, beside pg_restore of the same rows");
            data::transfer(&options.binary, &url, &options.postgres, &mut figures).await?;
        }
    }
    if let Some(transitions) = figures.iter().find(|(k, _)| k.ends_with("_transitions_per_s")).map(|(_, v)| *v) {
        figures.insert("ratio_transitions_per_commit".into(), transitions / figures["baseline_commits_per_s"]);
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(figures)
}

/// A line on stderr per scenario, so a long run shows where it is.
fn progress(backend: &str, scenario: &str) {
    eprintln!("bench: {backend}: {scenario}");
}

pub(crate) async fn fresh_postgres(admin_url: &str) -> Result<String> {
    use sqlx::Connection;
    let mut conn =
        sqlx::PgConnection::connect(admin_url).await.with_context(|| format!("connecting to {admin_url}"))?;
    let name = format!("trellis_test_bench_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await?;
    let base = admin_url.rsplit_once('/').map_or(admin_url, |(b, _)| b);
    Ok(format!("{base}/{name}"))
}

fn print_table(results: &BTreeMap<&str, Figures>) {
    let backends: Vec<&str> = results.keys().copied().collect();
    println!("\n| metric | {} |", backends.join(" | "));
    println!("|---|{}", "---:|".repeat(backends.len()));
    let mut metrics: Vec<&String> = results.values().flat_map(|f| f.keys()).collect();
    metrics.sort();
    metrics.dedup();
    for metric in metrics {
        let cells: Vec<String> =
            backends.iter().map(|b| results[b].get(metric).map_or("—".into(), |v| format!("{v:.2}"))).collect();
        println!("| {metric} | {} |", cells.join(" | "));
    }
}

#[cfg(test)]
mod tests {
    use super::groups;

    #[test]
    fn only_takes_one_group_or_several_and_refuses_an_unknown_one_by_name() {
        assert_eq!(groups("peers"), Ok(vec!["peers".to_owned()]));
        assert_eq!(groups("peers, engine"), Ok(vec!["peers".to_owned(), "engine".to_owned()]));
        assert_eq!(groups("peers,nope"), Err("not `nope`".to_owned()));
        assert_eq!(groups(","), Err("name a group".to_owned()));
    }
}
