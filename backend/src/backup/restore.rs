//! `trellis restore FILE`: a backup back into `DATABASE_URL`, with every server stopped.
//!
//! The backup is verified whole first; then it goes in beside the target and only replaces
//! it once complete (SQLite: a staged copy renamed into place, the old file kept as
//! `<name>.replaced-<time>`; Postgres: one transaction, see [`super::restore_pg`]), so a failed
//! or killed restore leaves the target as it was. Then this build's later migrations are
//! applied, the original's processes are forgotten, and the database is **held**: no schedule
//! fires and no work is claimed until an admin resumes it, so a restored copy never acts beside
//! the original. Runs in flight when the backup was taken go on from their last committed step
//! once resumed (their leases have lapsed by then).
//!
//! Refused, with nothing written: a file that is not a whole backup this build can read, a
//! backup of the other kind of database, a target a server is running on (a heartbeat in the
//! last 30 s), and a target holding data without `--replace`.

use super::files::Staged;
use super::{verify, Manifest};
use crate::cluster::{restored_reason, ALIVE_WITHIN};
use crate::config::DatabaseConfig;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{ConnectOptions, Connection};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What a restore did.
pub struct Restored {
    pub manifest: Manifest,
    /// Where the database that was there before went (SQLite: a file; Postgres: dropped).
    pub replaced: Option<String>,
    /// The schema version after this build's migrations.
    pub schema_version: i64,
}

pub async fn restore(db: &DatabaseConfig, file: &Path, replace: bool) -> Result<Restored> {
    let manifest = verify(file).await?;
    let url = db.database_url.as_str();
    let target = if crate::store::is_postgres_url(url) { "postgres" } else { "sqlite" };
    if manifest.backend != target {
        bail!(
            "{} is a backup of a {} database and restores into {0}, but DATABASE_URL is {target}",
            file.display(),
            manifest.backend
        );
    }
    // Migrated, held and without the original's processes before it is in place.
    let reason = restored_reason(&file.display().to_string(), manifest.created_at);
    let replaced = match target {
        "postgres" => super::restore_pg::restore(db, file, &manifest, replace, Some(&reason)).await?,
        _ => restore_sqlite(url, file, replace, &reason).await?.map(|p| p.display().to_string()),
    };
    let store = crate::store::connect(db).await.context("the backup was restored, but opening it failed")?;
    let schema_version = store.schema_version().await?;
    Ok(Restored { manifest, replaced, schema_version })
}

/// Says what was restored: a few lines for people, or JSON.
pub fn print(file: &Path, restored: &Restored, output: crate::cli::remote::render::Output) -> Result<()> {
    use crate::cli::remote::render::Output;
    let m = &restored.manifest;
    if output != Output::Table {
        let summary = serde_json::json!({
            "file": file.display().to_string(),
            "backup": m,
            "replaced": restored.replaced,
            "schema_version": restored.schema_version,
            "held": true,
        });
        println!(
            "{}",
            if output == Output::Json { serde_json::to_string_pretty(&summary)? } else { summary.to_string() }
        );
        return Ok(());
    }
    let rows: u64 = m.tables.iter().map(|t| t.rows).sum();
    println!(
        "restored {} ({} backup taken {}): {} tables, {rows} rows",
        file.display(),
        m.backend,
        m.created_at,
        m.tables.len()
    );
    if let Some(replaced) = &restored.replaced {
        println!("the database that was there: {replaced}");
    }
    println!("schema version {} → {}", m.schema_version, restored.schema_version);
    println!("the database is HELD: start the servers, look it over, then run `trellis cluster resume`");
    println!("(or Resume on the Cluster page). Secrets stay sealed: start with the master key of the");
    println!("database the backup was taken from.");
    Ok(())
}

/// Loads a Postgres archive into the empty database at `db` as it is: no hold, no migrations
/// past its own (`trellis migrate --check` tries those on it).
pub async fn restore_archive(db: &DatabaseConfig, file: &Path, manifest: &Manifest) -> Result<()> {
    super::restore_pg::restore(db, file, manifest, false, None).await.map(drop)
}

/// Refuses a target whose processes have a heartbeat within [`ALIVE_WITHIN`].
pub(super) fn refuse_if_served(seen: &[(String, String, i64, DateTime<Utc>)], target: &str) -> Result<()> {
    let now = Utc::now();
    if let Some((id, host, pid, last_seen)) = seen.iter().find(|(.., at)| now - *at < ALIVE_WITHIN) {
        bail!(
            "a server is running on {target} (process {id}, pid {pid} on {host}, seen {} s ago): stop every \
             `trellis serve` using it first, then restore",
            (now - *last_seen).num_seconds().max(0)
        );
    }
    Ok(())
}

/// Copies the SQLite backup `file` into place at `url`; the path the old database was moved to.
async fn restore_sqlite(url: &str, file: &Path, replace: bool, reason: &str) -> Result<Option<PathBuf>> {
    let path = SqliteConnectOptions::from_str(url)?.get_filename().to_owned();
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).with_context(|| format!("cannot make the folder {}", folder.display()))?;
    }
    let occupied = std::fs::metadata(&path).is_ok_and(|m| m.len() > 0);
    if occupied {
        refuse_if_served(&sqlite_processes(&path).await?, &path.display().to_string())?;
        if !replace {
            bail!(
                "{} already holds a database: give --replace to keep it as {}.replaced-<time> and restore in its \
                 place, or set DATABASE_URL to a new file",
                path.display(),
                path.display()
            );
        }
    }
    let staged = Staged::new(&path)?;
    std::fs::copy(file, staged.path()).with_context(|| format!("cannot copy {}", file.display()))?;
    let options = SqliteConnectOptions::new().filename(staged.path()).journal_mode(SqliteJournalMode::Delete);
    let mut copy = options.connect().await.context("opening the restored copy")?;
    sqlx::query(&format!("DROP TABLE IF EXISTS {}", super::sqlite::MANIFEST_TABLE)).execute(&mut copy).await?;
    let mut migrator = sqlx::migrate!("../migrations/sqlite");
    migrator.set_ignore_missing(true);
    migrator.run(&mut copy).await.context("migrating the restored copy")?;
    sqlx::query("DELETE FROM processes").execute(&mut copy).await?;
    sqlx::query("UPDATE cluster_state SET held = TRUE, held_reason = $1, held_since = $2 WHERE id = 1")
        .bind(reason)
        .bind(Utc::now())
        .execute(&mut copy)
        .await?;
    copy.close().await?;
    let replaced = if occupied { Some(set_aside(&path)?) } else { None };
    staged.commit()?;
    Ok(replaced)
}

/// The processes rows of the SQLite database at `path` (none if it has no such table).
async fn sqlite_processes(path: &Path) -> Result<Vec<(String, String, i64, DateTime<Utc>)>> {
    let options = SqliteConnectOptions::new().filename(path).read_only(true);
    let mut conn = options.connect().await.with_context(|| format!("cannot open {} as SQLite", path.display()))?;
    let has_table: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'processes')")
            .fetch_one(&mut conn)
            .await?;
    let seen = if has_table {
        sqlx::query_as("SELECT id, host, pid, last_seen FROM processes").fetch_all(&mut conn).await?
    } else {
        Vec::new()
    };
    conn.close().await?;
    Ok(seen)
}

/// Moves the database at `path` (with its write-ahead log, which belongs to it) to
/// `<name>.replaced-<time>`; the shared-memory index is rebuilt from the log, so it goes.
fn set_aside(path: &Path) -> Result<PathBuf> {
    let stamp = Utc::now().format("%Y%m%dT%H%M%SZ");
    let aside = PathBuf::from(format!("{}.replaced-{stamp}", path.display()));
    std::fs::rename(path, &aside).with_context(|| format!("cannot move {} aside", path.display()))?;
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    if wal.exists() {
        std::fs::rename(&wal, format!("{}-wal", aside.display()))
            .context("cannot move the old write-ahead log aside")?;
    }
    let _ = std::fs::remove_file(format!("{}-shm", path.display()));
    Ok(aside)
}
