//! SQLite: the embedded default, one process, zero setup.

use super::records::*;
use super::sql::{impl_store, like_pattern, WORKFLOW_COLUMNS};
use super::{Result, StoreError};
use chrono::Utc;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::types::Json;
use std::str::FromStr;
use std::time::Duration;
use trellis_model::Definition;
use uuid::Uuid;

pub struct SqliteStore {
    pool: SqlitePool,
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
        Ok(SqliteStore { pool })
    }
}

impl_store!(SqliteStore, "sqlite");
