//! `trellis migrate --check`: what this release's pending migrations would do to the database
//! at `DATABASE_URL`, learned on a copy — each one's time and outcome — with nothing changed.
//!
//! The copy is a backup (`crate::backup`) made while servers run: SQLite's is itself a database,
//! opened as it is; Postgres's archive is restored into a scratch database on the same server
//! (`<name>_trellis_check_<pid>`, dropped afterwards, which needs `CREATEDB`). Then each pending
//! migration is applied alone and timed, as a start would apply them.

use crate::config::DatabaseConfig;
use anyhow::{bail, Context, Result};
use sqlx::migrate::{Migrate, Migration, Migrator};
use sqlx::{ConnectOptions, Connection};
use std::time::Duration;

/// One pending migration, as tried on the copy.
pub struct Checked {
    pub version: i64,
    pub description: String,
    pub took: Duration,
    /// Why it failed; `None` when it applied.
    pub error: Option<String>,
}

pub async fn check(db: &DatabaseConfig) -> Result<Vec<Checked>> {
    let url = db.database_url.as_str();
    let folder = Scratch::new()?;
    let postgres = crate::store::is_postgres_url(url);
    let copy = folder.0.join(if postgres { "copy.jsonl.gz" } else { "copy.sqlite" });
    crate::backup::create(db, Some(copy.clone())).await.context("copying the database")?;
    if postgres {
        check_postgres(db, &copy).await
    } else {
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&copy).foreign_keys(true);
        let mut conn = options.connect().await.context("opening the copy")?;
        apply_pending(&mut conn, &sqlx::migrate!("../migrations/sqlite")).await
    }
}

async fn check_postgres(db: &DatabaseConfig, archive: &std::path::Path) -> Result<Vec<Checked>> {
    let url = db.direct_url();
    let mut admin = sqlx::PgConnection::connect(url).await?;
    let current: String = sqlx::query_scalar("SELECT current_database()").fetch_one(&mut admin).await?;
    let scratch = format!("{}_trellis_check_{}", current.chars().take(30).collect::<String>(), std::process::id());
    let quoted = crate::backup::sqlite::quoted(&scratch);
    sqlx::query(&format!("CREATE DATABASE {quoted}")).execute(&mut admin).await.with_context(|| {
        format!("cannot make the scratch database {scratch} for the copy (the role needs CREATEDB)")
    })?;
    let checked = async {
        let scratch_url = crate::store::with_database(url, &scratch);
        let manifest = crate::backup::verify(archive).await?;
        let scratch_db = DatabaseConfig::direct(&scratch_url, 2);
        crate::backup::restore::restore_archive(&scratch_db, archive, &manifest).await?;
        let mut conn = sqlx::PgConnection::connect(&scratch_url).await?;
        let checked = apply_pending(&mut conn, &sqlx::migrate!("../migrations/postgres")).await;
        let _ = conn.close().await;
        checked
    }
    .await;
    let dropped = sqlx::query(&format!("DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")).execute(&mut admin).await;
    if let Err(e) = dropped {
        tracing::warn!(error = %e, database = %scratch, "could not drop the scratch database; drop it by hand");
    }
    checked
}

/// A private folder for the copy, removed with everything in it when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        let path = std::env::temp_dir().join(format!("trellis-migrate-check-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).with_context(|| format!("cannot make {}", path.display()))?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Applies each migration `conn` has not, one at a time, timing each; stops at the first
/// failure (a start would stop there too).
async fn apply_pending<C: Migrate + Send>(conn: &mut C, migrator: &Migrator) -> Result<Vec<Checked>> {
    conn.ensure_migrations_table().await?;
    let applied: Vec<i64> = conn.list_applied_migrations().await?.into_iter().map(|m| m.version).collect();
    let newest_known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    if let Some(newer) = applied.iter().find(|v| **v > newest_known) {
        bail!("the database has migration {newer}, newer than this release knows ({newest_known}): it was migrated by a later release");
    }
    let mut checked = Vec::new();
    for migration in migrator.iter().filter(|m| m.migration_type.is_up_migration() && !applied.contains(&m.version)) {
        checked.push(apply_one(conn, migration).await);
        if checked.last().is_some_and(|c| c.error.is_some()) {
            break;
        }
    }
    Ok(checked)
}

async fn apply_one<C: Migrate + Send>(conn: &mut C, migration: &Migration) -> Checked {
    let started = std::time::Instant::now();
    let outcome = conn.apply(migration).await;
    Checked {
        version: migration.version,
        description: migration.description.to_string(),
        took: outcome.as_ref().map_or_else(|_| started.elapsed(), |took| *took),
        error: outcome.err().map(|e| e.to_string()),
    }
}

/// Says what the check found: a table for people, or JSON.
pub fn print(database: &str, checked: &[Checked], output: crate::cli::remote::render::Output) -> Result<()> {
    use crate::cli::remote::render::{self, Output};
    if output != Output::Table {
        let items: Vec<_> = checked
            .iter()
            .map(|c| {
                serde_json::json!({"version": c.version, "description": c.description,
                "ms": c.took.as_secs_f64() * 1e3, "outcome": if c.error.is_some() { "failed" } else { "applied" },
                "error": c.error})
            })
            .collect();
        let body = serde_json::json!({"database": database, "pending": items, "changed": false});
        println!("{}", if output == Output::Json { serde_json::to_string_pretty(&body)? } else { body.to_string() });
    } else if checked.is_empty() {
        println!("{database} has every migration of this release: nothing is pending");
    } else {
        let rows: Vec<Vec<String>> = checked
            .iter()
            .map(|c| {
                let outcome = c.error.as_deref().map_or_else(|| "applied".to_owned(), |e| format!("FAILED: {e}"));
                vec![
                    c.version.to_string(),
                    c.description.clone(),
                    format!("{:.1} ms", c.took.as_secs_f64() * 1e3),
                    outcome,
                ]
            })
            .collect();
        for line in render::table(&["version", "migration", "time", "outcome"], &rows) {
            println!("{line}");
        }
        println!("tried on a copy: nothing in {database} was changed");
    }
    if let Some(failed) = checked.iter().find(|c| c.error.is_some()) {
        bail!("migration {} would fail: fix it before upgrading", failed.version);
    }
    Ok(())
}
