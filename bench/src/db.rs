//! Direct database access for what the API does not expose cheaply: node timings of
//! thousands of instances, and the baseline commit rate of the same database.

use anyhow::Result;
use chrono::{DateTime, Utc};
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqliteSynchronous};
use sqlx::Connection;
use std::str::FromStr;
use std::time::Instant;

pub enum Db {
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

impl Db {
    pub async fn open(url: &str) -> Result<Db> {
        if url.starts_with("postgres") {
            Ok(Db::Postgres(PgPool::connect(url).await?))
        } else {
            // The same durability settings as the server's connections, so the baseline is fair.
            let options = SqliteConnectOptions::from_str(url)?
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(std::time::Duration::from_secs(10));
            Ok(Db::Sqlite(SqlitePool::connect_with(options).await?))
        }
    }

    /// `ended_at` of every node named `node`, across all instances.
    pub async fn node_ends(&self, node: &str) -> Result<Vec<DateTime<Utc>>> {
        let sql = "SELECT ended_at FROM instance_nodes WHERE node_id = $1 AND ended_at IS NOT NULL";
        let rows: Vec<(DateTime<Utc>,)> = match self {
            Db::Postgres(pool) => sqlx::query_as(sql).bind(node).fetch_all(pool).await?,
            Db::Sqlite(pool) => sqlx::query_as(sql).bind(node).fetch_all(pool).await?,
        };
        Ok(rows.into_iter().map(|(t,)| t).collect())
    }

    /// Single-row commits per second: one INSERT per transaction, one after the other.
    pub async fn commit_rate(&self, rows: usize) -> Result<f64> {
        let create = "CREATE TABLE IF NOT EXISTS bench_commits (id BIGINT PRIMARY KEY, note TEXT NOT NULL)";
        let insert = "INSERT INTO bench_commits (id, note) VALUES ($1, $2)";
        let started = Instant::now();
        match self {
            Db::Postgres(pool) => {
                sqlx::query(create).execute(pool).await?;
                let mut conn = pool.acquire().await?;
                for i in 0..rows {
                    let mut tx = conn.begin().await?;
                    sqlx::query(insert).bind(i as i64).bind("commit").execute(&mut *tx).await?;
                    tx.commit().await?;
                }
            }
            Db::Sqlite(pool) => {
                sqlx::query(create).execute(pool).await?;
                let mut conn = pool.acquire().await?;
                for i in 0..rows {
                    let mut tx = conn.begin().await?;
                    sqlx::query(insert).bind(i as i64).bind("commit").execute(&mut *tx).await?;
                    tx.commit().await?;
                }
            }
        }
        Ok(rows as f64 / started.elapsed().as_secs_f64())
    }
}
