//! Postgres: the production backend, shared by any number of `trellis serve` processes.

use super::engine_records::*;
use super::records::*;
use super::engine_sql::{bind_filter, impl_instance_store, ACTIVE, FILTER, INSTANCE_COLUMNS, NODE_COLUMNS, WORK_COLUMNS};
use super::trigger_sql::impl_trigger_store;
use super::sql::{impl_store, like_pattern, WORKFLOW_COLUMNS};
use super::Decide;
use super::{Result, StoreError};
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::types::Json;
use std::str::FromStr;
use std::time::Duration;
use trellis_model::Definition;
use uuid::Uuid;

pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(url)?.application_name("trellis");
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", super::redact_url(url)))?;
        // Migrations take an advisory lock, so processes starting together apply them once.
        sqlx::migrate!("../migrations/postgres").run(&pool).await?;
        Ok(PgStore { pool })
    }
}

impl_store!(PgStore, "postgres");
impl_trigger_store!(PgStore);
impl_instance_store!(PgStore, sqlx::Postgres);

const LOCK_ROW: &str = " FOR UPDATE";
const SKIP_LOCKED: &str = " FOR UPDATE SKIP LOCKED";

impl PgStore {
    /// Postgres serializes conflicting writers itself (row locks); nothing to hold here.
    async fn write_guard(&self) {}
}
