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

    /// Inserts finished instances straight into `instances`, as many as `rows` gives (workflow,
    /// status, business key, created at), a thousand per statement, then refreshes the
    /// planner's statistics as autovacuum would after a bulk load. Ids are UUIDv7 of their
    /// creation time, as the server makes them.
    pub async fn seed_instances(&self, rows: &[SeedRow]) -> Result<()> {
        macro_rules! insert {
            ($pool:expr, $db:ty) => {{
                for chunk in rows.chunks(1_000) {
                    let mut insert = sqlx::QueryBuilder::<$db>::new(
                        "INSERT INTO instances (id, workflow_id, version, status, input, error, failed_node, error_class, \
                         business_key, created_at, started_at, ended_at) ",
                    );
                    insert.push_values(chunk, |mut v, row| {
                        let ended = row.created_at + chrono::Duration::milliseconds(40);
                        let (node, error) = match &row.failure {
                            Some((node, error)) => (Some(node.clone()), Some(error.clone())),
                            None => (None, None),
                        };
                        let class = error.as_deref().map(trellis_model::failure::error_class);
                        v.push_bind(seed_id(row.created_at))
                            .push_bind(row.workflow)
                            .push_bind(1i64)
                            .push_bind(row.status)
                            .push_bind(sqlx::types::Json(row.input.clone()))
                            .push_bind(error)
                            .push_bind(node)
                            .push_bind(class)
                            .push_bind(row.key.clone())
                            .push_bind(row.created_at)
                            .push_bind(row.created_at)
                            .push_bind(ended);
                    });
                    insert.build().execute($pool).await?;
                }
            }};
        }
        match self {
            Db::Postgres(pool) => {
                insert!(pool, sqlx::Postgres);
                sqlx::query("VACUUM ANALYZE instances").execute(pool).await?;
            }
            Db::Sqlite(pool) => {
                insert!(pool, sqlx::Sqlite);
                sqlx::query("ANALYZE").execute(pool).await?;
            }
        }
        Ok(())
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

/// One instance for `seed_instances`.
pub struct SeedRow {
    pub workflow: uuid::Uuid,
    pub status: &'static str,
    pub key: Option<String>,
    /// Of a failed instance: the failing node and the error (its class is computed as the
    /// engine does).
    pub failure: Option<(String, String)>,
    pub created_at: DateTime<Utc>,
    /// What it was started with (`null` when the scenario does not search by content).
    pub input: serde_json::Value,
}

/// A UUIDv7 of `at`: time-ordered like the server's ids.
fn seed_id(at: DateTime<Utc>) -> uuid::Uuid {
    let ts = uuid::Timestamp::from_unix(uuid::NoContext, at.timestamp() as u64, at.timestamp_subsec_nanos());
    uuid::Uuid::new_v7(ts)
}
