//! SQLite: the embedded default, one process, zero setup.

use super::backend::Backend;
use super::notice::Notice;
use super::snapshots::Snapshots;
use super::Result;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::mpsc::Receiver;
use tokio::sync::{Mutex, MutexGuard};
use uuid::Uuid;

pub struct SqliteStore {
    pool: SqlitePool,
    /// Serializes this process's write transactions. SQLite allows one writer; letting two
    /// deferred transactions race for the lock can fail one with SQLITE_BUSY at once
    /// (busy_timeout does not cover a read lock upgraded to a write lock).
    writer: Mutex<()>,
    /// Names this store in announcements (unused: SQLite has one process).
    origin: Uuid,
    snapshots: Snapshots,
}

impl SqliteStore {
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            // Set on every connection (not in a migration): WAL lets readers run beside the
            // writer, FULL makes each commit durable before it is acknowledged.
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            // Each pooled connection keeps its own prepared programs and page cache. With 16 of
            // them at the defaults (100 statements, 2 MiB of pages) a soak's server grew
            // 76 → 121 MiB in 4 minutes, mostly the programs; with these, 75 → 94 MiB. The hot
            // statements are a few dozen; a page not cached here is read from the OS's cache.
            .statement_cache_capacity(STATEMENT_CACHE)
            .pragma("cache_size", format!("-{CACHE_KIB}"));
        if let Some(dir) = options.get_filename().parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create the database folder {}: {e}", dir.display()))?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections.max(1))
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot open {url}: {e}"))?;
        // One process: no one to wait for before a contracting migration (see `cluster::compat`).
        let mut migrator = sqlx::migrate!("../migrations/sqlite");
        migrator.set_ignore_missing(true);
        migrator.run(&pool).await?;
        let needed = crate::cluster::compat::compatible_from(&migrator);
        sqlx::query(crate::cluster::compat::RAISE_COMPATIBLE_FROM).bind(needed).execute(&pool).await?;
        let from: i64 = sqlx::query_scalar(crate::cluster::compat::COMPATIBLE_FROM).fetch_one(&pool).await?;
        let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
        if let Some(why) = crate::cluster::compat::too_old(known, from) {
            anyhow::bail!("{why}");
        }
        Ok(SqliteStore { pool, writer: Mutex::new(()), origin: Uuid::now_v7(), snapshots: Snapshots::default() })
    }
}

/// Statements each connection keeps prepared (sqlx's default is 100).
const STATEMENT_CACHE: usize = 24;
/// Each connection's page cache, KiB (sqlite's default is 2,000).
const CACHE_KIB: u32 = 512;

/// The store type the queries (`queries/`) are implemented for in this backend.
type Store = SqliteStore;

// Loaded by both backends on purpose: one SQL body, type-checked against each driver.
#[allow(clippy::duplicate_mod)]
#[path = "queries/mod.rs"]
mod queries;

/// One process, one writer: no row locks to take or skip, nobody to announce to.
impl Backend for SqliteStore {
    type Db = sqlx::Sqlite;
    type WriteGuard<'a> = MutexGuard<'a, ()>;

    const NAME: &'static str = "sqlite";
    const LOCK_ROW: &'static str = "";
    const SKIP_LOCKED: &'static str = "";
    const NEWEST_ID: &'static str = "MAX(id)";
    // Fractional: `unixepoch` would drop the milliseconds a duration is made of.
    const EPOCH_OF: &'static str = "((julianday({}) - 2440587.5) * 86400.0)";
    const UUID_TEXT: &'static str = "lower(substr(hex({}), 1, 8) || '-' || substr(hex({}), 9, 4) || '-' || \
        substr(hex({}), 13, 4) || '-' || substr(hex({}), 17, 4) || '-' || substr(hex({}), 21))";
    const FLOOR: &'static str = "";
    const INSTANCES_BY_END: &'static str = "instances INDEXED BY instances_by_end";
    const NOTIFY_EVENTS: Option<(&'static str, &'static str)> = None;
    const COMBINED_WRITES: bool = false;
    const KEEP_BUILT_STATEMENTS: bool = false;

    type Pool = SqlitePool;

    fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    fn origin(&self) -> Uuid {
        self.origin
    }

    async fn autocommit_connection(&self) -> Result<Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>> {
        Ok(None)
    }

    fn snapshots(&self) -> &Snapshots {
        &self.snapshots
    }

    async fn write_guard(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().await
    }

    /// One process: the event bus hears of every commit directly.
    async fn listen_for_notices(&self) -> Result<Option<Receiver<Notice>>> {
        Ok(None)
    }
}
