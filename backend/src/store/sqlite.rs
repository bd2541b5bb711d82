//! SQLite: the embedded default, one process, zero setup.

use super::account_sql::impl_account_store;
use super::admission_sql::impl_admission;
use super::audit_sql::impl_audit_store;
use super::engine_records::*;
use super::engine_sql::{
    bind_filter, impl_instance_store, EVENTS_PER_INSERT, FILTER, INSTANCE_COLUMNS, NODE_COLUMNS, WORK_COLUMNS,
};
use super::job_sql::impl_job_store;
use super::records::*;
use super::retention_sql::impl_retention_store;
use super::sql::{impl_store, like_pattern, WORKFLOW_COLUMNS};
use super::statuses::ACTIVE;
use super::trigger_sql::impl_trigger_store;
use super::work_sql::impl_work_queue;
use super::{Decide, RetryDecide};
use super::{Result, StoreError};
use chrono::{DateTime, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::types::Json;
use std::str::FromStr;
use std::time::Duration;
use trellis_model::Definition;
use uuid::Uuid;

pub struct SqliteStore {
    pool: SqlitePool,
    /// Serializes this process's write transactions. SQLite allows one writer; letting two
    /// deferred transactions race for the lock can fail one with SQLITE_BUSY at once
    /// (busy_timeout does not cover a read lock upgraded to a write lock).
    writer: tokio::sync::Mutex<()>,
    /// Names this store in announcements (unused: SQLite has one process).
    origin: Uuid,
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
            .foreign_keys(true);
        if let Some(dir) = options.get_filename().parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create the database folder {}: {e}", dir.display()))?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections.max(1))
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot open {url}: {e}"))?;
        sqlx::migrate!("../migrations/sqlite").run(&pool).await?;
        Ok(SqliteStore { pool, writer: tokio::sync::Mutex::new(()), origin: Uuid::now_v7() })
    }
}

impl_store!(SqliteStore, "sqlite");
impl_trigger_store!(SqliteStore);
impl_audit_store!(SqliteStore);
impl_account_store!(SqliteStore);
impl_instance_store!(SqliteStore, sqlx::Sqlite);
impl_admission!(SqliteStore, sqlx::Sqlite);
impl_work_queue!(SqliteStore);
impl_job_store!(SqliteStore, sqlx::Sqlite);
impl_retention_store!(SqliteStore, sqlx::Sqlite);

const LOCK_ROW: &str = "";
const SKIP_LOCKED: &str = "";
const NOTIFY_EVENTS: Option<&str> = None;

impl SqliteStore {
    async fn write_guard(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.writer.lock().await
    }

    /// One process: the event bus hears of every commit directly.
    async fn listen_for_notices(&self) -> Result<Option<tokio::sync::mpsc::Receiver<super::notice::Notice>>> {
        Ok(None)
    }
}
