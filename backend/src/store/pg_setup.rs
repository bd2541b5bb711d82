//! Applying the Postgres migrations, directly or from behind a transaction-mode pooler.
//!
//! sqlx's migrator takes a session-level advisory lock (so processes starting together
//! apply each migration once) and names its statements: neither survives a pooler in
//! transaction mode, where the lock could be taken on one server connection and released on
//! another, leaving it held for good. So behind a pooler the migrations run over
//! `TRELLIS_DIRECT_DATABASE_URL`; without it, the process starts only if nothing is pending,
//! and otherwise says what to do.

use super::pg_pool::PgDb;
use sqlx::migrate::Migrator;
use sqlx::postgres::PgPool;
use std::collections::HashSet;

static MIGRATOR: Migrator = sqlx::migrate!("../migrations/postgres");

/// Applies pending migrations: over `direct` when given, else over `db` unless that is a
/// transaction-mode pooler, through which it only checks that none is pending.
pub async fn migrate(db: &PgDb, direct: Option<&PgPool>) -> anyhow::Result<()> {
    match (direct, db.behind_pooler()) {
        (Some(direct), _) => Ok(MIGRATOR.run(direct).await?),
        (None, false) => Ok(MIGRATOR.run(db.inner()).await?),
        (None, true) => {
            let pending = pending(db).await?;
            if pending > 0 {
                anyhow::bail!(
                    "{pending} database migration(s) are pending and cannot be applied through a transaction-mode \
                     pooler (they hold a session lock): set TRELLIS_DIRECT_DATABASE_URL to a URL straight to \
                     Postgres, or run `trellis migrate` once with DATABASE_URL pointing straight at it"
                );
            }
            Ok(())
        }
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
