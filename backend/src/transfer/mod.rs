//! `trellis transfer --from URL --to URL`: everything in one database — workflows, versions,
//! triggers, sealed secrets, users, keys, views, alerts, instances with their history — into an
//! empty database of the other kind. SQLite → Postgres is how one grows from one process to
//! many; Postgres → SQLite takes a copy to a laptop. (Between two databases of one kind, a
//! backup and a restore do it.)
//!
//! The source is read in one snapshot and must be at this release's schema version; the
//! target is migrated to it. Tables go parents first; each goes in one target transaction that
//! also records it in `_trellis_transfer` with its row count and digest, so a transfer
//! interrupted at any moment is run again with the same command and goes on from the first
//! table not recorded. Then every table is read back from the target and its count and digest
//! compared with the source's; only then is the ledger dropped. A source that a server was
//! running on while it was read leaves the target held (see `crate::cluster::hold`).

mod columns;
mod conn;
mod postgres;
mod sqlite;

use crate::backup::sqlite::quoted;
use crate::config::DatabaseConfig;
use anyhow::{bail, Context, Result};
use columns::{Row, Table, Tally};
use futures_util::{Stream, TryStreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection, SqliteConnection};
use std::str::FromStr;
use std::time::Instant;

/// Tables never carried: migrations are the target's own, the ledger is the transfer's,
/// the source's processes are not the target's, and the target keeps its own hold (held while
/// the transfer is under way).
const NOT_CARRIED: &[&str] = &["_sqlx_migrations", LEDGER, "processes", "_trellis_backup", "cluster_state"];
const LEDGER: &str = "_trellis_transfer";
const BATCH_ROWS: usize = 1_000;
/// Rows are sent in batches of at most this much canonical text (node outputs run to MiBs).
const BATCH_BYTES: usize = 8 << 20;

/// What a transfer did.
#[derive(Debug)]
pub struct Report {
    /// Each table carried, with its rows (tables an earlier, interrupted run carried included).
    pub tables: Vec<(String, u64)>,
    /// Tables an earlier run had carried already.
    pub resumed: usize,
    pub seconds: f64,
    /// The source was in use while read, so the target is held.
    pub held: bool,
}

enum Conn {
    Sqlite(SqliteConnection),
    Pg(PgConnection),
}

pub async fn transfer(from: &str, to: &str) -> Result<Report> {
    let began = Instant::now();
    let (from_kind, to_kind) = (kind(from)?, kind(to)?);
    if from_kind == to_kind {
        bail!(
            "both are {from_kind} databases: to copy one to another, use `trellis backup create` and `trellis restore`"
        );
    }
    let mut source = open(from, false).await?;
    let known = crate::store::newest_migration(from_kind);
    let version =
        source.schema_version().await?.with_context(|| format!("{} is not a Trellis database", redact(from)))?;
    if version != known {
        bail!(
            "{} is at schema version {version} and this release carries {known}: run this release's `trellis migrate` \
             on it first (or transfer with the release that made it)",
            redact(from)
        );
    }
    let source_live = source.live_processes().await? > 0;
    let mut target = prepare_target(to, from).await?;
    let tables = carried_tables(&mut source, &mut target).await?;
    source
        .exec(if from_kind == "postgres" { "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" } else { "BEGIN" })
        .await?;
    let done = target.ledger().await?;
    let mut todo_rows = 0;
    for table in tables.iter().filter(|t| !done.iter().any(|(n, ..)| *n == t.name)) {
        todo_rows += source.count(table).await?;
    }
    let bar = progress_bar(todo_rows);
    for table in &tables {
        if done.iter().any(|(name, ..)| *name == table.name) {
            continue;
        }
        bar.set_message(table.name.clone());
        carry(&mut source, &mut target, table, &bar).await?;
    }
    source.exec("COMMIT").await?;
    bar.finish_and_clear();
    let mut carried = Vec::with_capacity(tables.len());
    let recorded = target.ledger().await?;
    for table in &tables {
        let tally = target.tally(table).await?;
        match recorded.iter().find(|(name, ..)| *name == table.name) {
            Some((_, rows, digest)) if *rows == tally.rows as i64 && *digest == tally.digest() => {}
            _ => bail!("table `{}` reads back from the target unlike the source: run the transfer again", table.name),
        }
        carried.push((table.name.clone(), tally.rows));
    }
    // Held from its migration on; released only when nothing could act beside it.
    if source_live {
        let reason = format!("transferred from {} while a server was running on it", redact(from));
        target.set_hold(Some(&reason)).await?;
    } else {
        target.set_hold(None).await?;
    }
    target.exec(&format!("DROP TABLE {LEDGER}")).await?;
    let resumed = done.len();
    Ok(Report { tables: carried, resumed, seconds: began.elapsed().as_secs_f64(), held: source_live })
}

/// Opens the target: an empty database is migrated and given a ledger; one with this source's
/// ledger is taken up again; anything else is refused.
async fn prepare_target(to: &str, from: &str) -> Result<Conn> {
    let mut target = open(to, true).await?;
    let tables = target.table_names().await?;
    if tables.iter().any(|t| t == LEDGER) {
        let source = target.ledger_source().await?;
        if source.is_none() {
            // Killed between making the ledger and naming its source: named now, so a run
            // from another source is still refused.
            target.set_ledger_source(&redact(from)).await?;
        }
        if source.as_deref().is_some_and(|s| s != redact(from)) {
            bail!(
                "{} holds part of a transfer from {}, not from {}",
                redact(to),
                source.unwrap_or_default(),
                redact(from)
            );
        }
        if target.live_processes().await? > 0 {
            bail!("a server is running on {}: stop it before the transfer goes on", redact(to));
        }
    } else if !tables.is_empty() {
        bail!(
            "{} is not empty ({} tables, e.g. `{}`): transfer into an empty database",
            redact(to),
            tables.len(),
            tables[0]
        );
    } else {
        // The ledger first: a run killed while migrating is taken up again, not refused.
        target.exec(conn::CREATE_LEDGER).await?;
        target.set_ledger_source(&redact(from)).await?;
    }
    // Migrated by the store as at a server's start (SQLite: into WAL mode), then reopened.
    target.close().await;
    drop(crate::store::connect(&DatabaseConfig::direct(to, 2)).await.context("migrating the target")?);
    let mut target = open(to, false).await?;
    // Until it is whole, no server may act on it (and `trellis serve` refuses it: the ledger).
    target.set_hold(Some(&format!("a transfer from {} is under way", redact(from)))).await?;
    Ok(target)
}

/// The tables to carry, parents first, as both sides have them (or a refusal naming the difference).
async fn carried_tables(source: &mut Conn, target: &mut Conn) -> Result<Vec<Table>> {
    let (pg, lite) = match (source, target) {
        (Conn::Pg(pg), Conn::Sqlite(lite)) | (Conn::Sqlite(lite), Conn::Pg(pg)) => (pg, lite),
        _ => bail!("a transfer goes between SQLite and Postgres"),
    };
    let carried = |name: &str| !NOT_CARRIED.contains(&name);
    let mut tables = Vec::new();
    for table in postgres::tables(pg).await?.into_iter().filter(|t| carried(&t.name)) {
        tables.push(sqlite::matching(lite, &table).await?);
    }
    let lite_names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )
    .fetch_all(&mut *lite)
    .await?;
    for extra in lite_names.iter().filter(|n| carried(n) && !tables.iter().any(|t| t.name == **n)) {
        // Not Trellis's (its schema is the same on both sides): someone's own table.
        tracing::warn!(table = %extra, "the SQLite database has a table Trellis does not make; it is not carried");
    }
    Ok(tables)
}

/// Copies one table in one target transaction, recording it in the ledger.
async fn carry(source: &mut Conn, target: &mut Conn, table: &Table, bar: &ProgressBar) -> Result<()> {
    target.exec(if matches!(target, Conn::Sqlite(_)) { "BEGIN IMMEDIATE" } else { "BEGIN" }).await?;
    let copied = async {
        // Rows a migration seeded, or an interrupted run's: the source's rows replace them.
        target.exec(&format!("DELETE FROM {}", quoted(&table.name))).await?;
        let tally = match source {
            Conn::Sqlite(conn) => {
                let select = sqlite::select(table);
                pump(sqlite::rows(conn, &select, table), target, table, bar).await?
            }
            Conn::Pg(conn) => {
                let select = postgres::select(table);
                pump(postgres::rows(conn, &select, table), target, table, bar).await?
            }
        };
        target.record(table, &tally).await
    }
    .await;
    match copied {
        Ok(()) => target.exec("COMMIT").await,
        Err(e) => {
            let _ = target.exec("ROLLBACK").await;
            Err(e)
        }
    }
}

async fn pump(
    rows: impl Stream<Item = Result<Row>>,
    target: &mut Conn,
    table: &Table,
    bar: &ProgressBar,
) -> Result<Tally> {
    let mut rows = std::pin::pin!(rows);
    let (mut tally, mut batch, mut bytes) = (Tally::default(), Vec::with_capacity(BATCH_ROWS), 0);
    while let Some(row) = rows.try_next().await? {
        bytes += tally.add(&row);
        batch.push(row);
        if batch.len() == BATCH_ROWS || bytes >= BATCH_BYTES {
            target.insert(table, &batch).await?;
            bar.inc(batch.len() as u64);
            batch.clear();
            bytes = 0;
        }
    }
    target.insert(table, &batch).await?;
    bar.inc(batch.len() as u64);
    Ok(tally)
}

/// Says what was carried: a table for people, or JSON.
pub fn print(report: &Report, output: crate::cli::remote::render::Output) -> Result<()> {
    use crate::cli::remote::render::{self, Output};
    let rows: u64 = report.tables.iter().map(|(_, n)| n).sum();
    if output != Output::Table {
        let tables: Vec<_> =
            report.tables.iter().map(|(name, rows)| serde_json::json!({"name": name, "rows": rows})).collect();
        let summary = serde_json::json!({"tables": tables, "rows": rows, "resumed_tables": report.resumed,
            "seconds": report.seconds, "held": report.held});
        println!(
            "{}",
            if output == Output::Json { serde_json::to_string_pretty(&summary)? } else { summary.to_string() }
        );
        return Ok(());
    }
    let lines: Vec<Vec<String>> =
        report.tables.iter().map(|(name, rows)| vec![name.clone(), rows.to_string()]).collect();
    for line in render::table(&["table", "rows"], &lines) {
        println!("{line}");
    }
    let rate = rows as f64 / report.seconds.max(0.001);
    println!(
        "transferred {rows} rows in {:.1} s ({rate:.0} rows/s); every table's count and digest match",
        report.seconds
    );
    if report.resumed > 0 {
        println!("{} tables had been carried by an earlier, interrupted run", report.resumed);
    }
    if report.held {
        println!(
            "a server was running on the source while it was read: the target is HELD until `trellis cluster resume`"
        );
    }
    Ok(())
}

fn progress_bar(rows: u64) -> ProgressBar {
    let bar = ProgressBar::new(rows);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:24} [{bar:32}] {human_pos}/{human_len} rows, {per_sec}, {eta} left")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn kind(url: &str) -> Result<&'static str> {
    if crate::store::is_postgres_url(url) {
        Ok("postgres")
    } else if url.starts_with("sqlite:") {
        Ok("sqlite")
    } else {
        bail!("`{}` is neither sqlite://PATH nor postgres://…", redact(url))
    }
}

fn redact(url: &str) -> String {
    crate::store::redact_url(url)
}

async fn open(url: &str, create: bool) -> Result<Conn> {
    Ok(match kind(url)? {
        "postgres" => {
            Conn::Pg(PgConnection::connect(url).await.with_context(|| format!("cannot connect to {}", redact(url)))?)
        }
        _ => {
            let options = SqliteConnectOptions::from_str(url)?.create_if_missing(create).foreign_keys(true);
            if !create && !options.get_filename().is_file() {
                bail!("there is no SQLite database at {}", options.get_filename().display());
            }
            Conn::Sqlite(options.connect().await.with_context(|| format!("cannot open {url}"))?)
        }
    })
}
