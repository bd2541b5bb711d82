//! Applying the Postgres migrations, directly or from behind a transaction-mode pooler.
//!
//! sqlx's migrator takes a session-level advisory lock (so processes starting together
//! apply each migration once) and names its statements: neither survives a pooler in
//! transaction mode, where the lock could be taken on one server connection and released on
//! another, leaving it held for good. So behind a pooler the migrations run over
//! `TRELLIS_DIRECT_DATABASE_URL`; without it, the process starts only if nothing is pending,
//! and otherwise says what to do.

use super::pg_pool::PgDb;
use super::ProcessRow;
use crate::cluster::compat;
use sqlx::migrate::Migrator;
use sqlx::postgres::PgPool;
use std::collections::HashSet;

static MIGRATOR: Migrator = sqlx::migrate!("../migrations/postgres");

/// Applies pending migrations: over `direct` when given, else over `db` unless that is a
/// transaction-mode pooler, through which it only checks that none is pending.
pub async fn migrate(db: &PgDb, direct: Option<&PgPool>) -> anyhow::Result<()> {
    match (direct, db.behind_pooler()) {
        (Some(direct), _) => run(direct).await?,
        (None, false) => run(db.inner()).await?,
        (None, true) => {
            let pending = pending(db).await?;
            if pending > 0 {
                anyhow::bail!(
                    "{pending} database migration(s) are pending and cannot be applied through a transaction-mode \
                     pooler (they hold a session lock): set TRELLIS_DIRECT_DATABASE_URL to a URL straight to \
                     Postgres, or run `trellis migrate` once with DATABASE_URL pointing straight at it"
                );
            }
        }
    }
    let from: Option<i64> = sqlx::query_scalar(compat::COMPATIBLE_FROM).fetch_optional(db).await?;
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    match from.and_then(|from| compat::too_old(known, from)) {
        Some(why) => anyhow::bail!("{why}"),
        None => Ok(()),
    }
}

/// Applies this release's pending migrations, ignoring newer ones a later release applied; a
/// contracting one waits until no live process knows less than it.
async fn run(pool: &PgPool) -> anyhow::Result<()> {
    let mut migrator = sqlx::migrate!("../migrations/postgres");
    migrator.set_ignore_missing(true);
    wait_for_older(pool, &migrator).await?;
    // Raised before a contracting migration is applied too, so an older process starting in
    // between is refused rather than running on the contracted schema.
    let needed = compat::compatible_from(&migrator);
    let has_state: Option<String> =
        sqlx::query_scalar("SELECT to_regclass('cluster_state')::text").fetch_one(pool).await?;
    if has_state.is_some() {
        sqlx::query(compat::RAISE_COMPATIBLE_FROM).bind(needed).execute(pool).await?;
    }
    migrator.run(pool).await?;
    sqlx::query(compat::RAISE_COMPATIBLE_FROM).bind(needed).execute(pool).await?;
    Ok(())
}

/// Waits while a live process knows less than the newest pending contracting migration.
async fn wait_for_older(pool: &PgPool, migrator: &Migrator) -> anyhow::Result<()> {
    let applied: Vec<i64> =
        match sqlx::query_scalar::<_, Option<String>>("SELECT to_regclass('_sqlx_migrations')::text")
            .fetch_one(pool)
            .await?
        {
            Some(_) => sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success").fetch_all(pool).await?,
            None => return Ok(()),
        };
    let Some(&contract) = compat::pending_contracts(migrator, &applied).last() else { return Ok(()) };
    let mut said = None::<std::time::Instant>;
    loop {
        let has_processes: Option<String> =
            sqlx::query_scalar("SELECT to_regclass('processes')::text").fetch_one(pool).await?;
        if has_processes.is_none() {
            return Ok(());
        }
        let processes: Vec<ProcessRow> = sqlx::query_as(
            "SELECT id, version, schema_known, host, pid, listen, started_at, last_seen, draining FROM processes",
        )
        .fetch_all(pool)
        .await?;
        let blockers = compat::blockers(contract, &processes, None, chrono::Utc::now());
        if blockers.is_empty() {
            return Ok(());
        }
        if said.is_none_or(|at| at.elapsed() >= std::time::Duration::from_secs(10)) {
            let names: Vec<String> = blockers
                .iter()
                .map(|p| format!("{} (release {}, pid {} on {})", p.id, p.version, p.pid, p.host))
                .collect();
            tracing::warn!(
                migration = contract,
                "waiting to apply migration {contract}, which processes of older releases cannot run beside: stop or \
                 upgrade {}",
                names.join(", ")
            );
            said = Some(std::time::Instant::now());
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

/// How many of this build's migrations the database has not applied (read through the
/// pooler-safe `PgDb`).
async fn pending(db: &PgDb) -> anyhow::Result<usize> {
    let (table,): (Option<String>,) =
        sqlx::query_as("SELECT to_regclass('_sqlx_migrations')::text").fetch_one(db).await?;
    let applied: HashSet<i64> = match table {
        Some(_) => sqlx::query_as::<_, (i64,)>("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(db)
            .await?
            .into_iter()
            .map(|(v,)| v)
            .collect(),
        None => HashSet::new(),
    };
    Ok(MIGRATOR.iter().filter(|m| m.migration_type.is_up_migration() && !applied.contains(&m.version)).count())
}
