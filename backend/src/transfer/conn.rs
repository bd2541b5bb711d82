//! A connection to either side, and what a transfer asks of it.

use super::columns::{Row, Table, Tally};
use super::{postgres, sqlite, Conn, LEDGER};
use crate::backup::sqlite::quoted;
use crate::cluster::ALIVE_WITHIN;
use anyhow::Result;
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use sqlx::Connection;

/// Each carried table's count and digest, and (in the row named by `SOURCE_ROW`) the source.
pub const CREATE_LEDGER: &str =
    "CREATE TABLE _trellis_transfer (name TEXT PRIMARY KEY, rows BIGINT NOT NULL, digest TEXT NOT NULL)";
/// The ledger's row naming the source, so a run against another source is refused.
const SOURCE_ROW: &str = "(source)";

macro_rules! on_either {
    ($conn:expr, $c:ident => $body:expr) => {
        match $conn {
            Conn::Sqlite($c) => $body,
            Conn::Pg($c) => $body,
        }
    };
}

impl Conn {
    pub async fn exec(&mut self, sql: &str) -> Result<()> {
        on_either!(self, c => { sqlx::raw_sql(sql).execute(&mut *c).await?; });
        Ok(())
    }

    pub async fn close(self) {
        on_either!(self, c => { let _ = c.close().await; });
    }

    /// The highest migration applied, or `None` without a migrations table.
    pub async fn schema_version(&mut self) -> Result<Option<i64>> {
        if !self.table_names().await?.iter().any(|t| t == "_sqlx_migrations") {
            return Ok(None);
        }
        let sql = "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success";
        Ok(Some(on_either!(self, c => sqlx::query_scalar::<_, i64>(sql).fetch_one(&mut *c).await?)))
    }

    /// The user tables, by name.
    pub async fn table_names(&mut self) -> Result<Vec<String>> {
        Ok(match self {
            Conn::Sqlite(c) => sqlx::query_scalar(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
            )
            .fetch_all(&mut *c)
            .await?,
            Conn::Pg(c) => sqlx::query_scalar(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
            )
            .fetch_all(&mut *c)
            .await?,
        })
    }

    /// How many processes wrote a heartbeat within the last 30 s.
    pub async fn live_processes(&mut self) -> Result<usize> {
        if !self.table_names().await?.iter().any(|t| t == "processes") {
            return Ok(0);
        }
        let sql = "SELECT last_seen FROM processes";
        let seen: Vec<DateTime<Utc>> = on_either!(self, c => sqlx::query_scalar(sql).fetch_all(&mut *c).await?);
        let now = Utc::now();
        Ok(seen.into_iter().filter(|at| now - *at < ALIVE_WITHIN).count())
    }

    pub async fn count(&mut self, table: &Table) -> Result<u64> {
        let sql = format!("SELECT COUNT(*) FROM {}", quoted(&table.name));
        let n: i64 = on_either!(self, c => sqlx::query_scalar(&sql).fetch_one(&mut *c).await?);
        Ok(n.max(0) as u64)
    }

    pub async fn insert(&mut self, table: &Table, rows: &[Row]) -> Result<()> {
        match self {
            Conn::Sqlite(c) => sqlite::insert(c, table, rows).await,
            Conn::Pg(c) => postgres::insert(c, table, rows).await,
        }
    }

    /// Counts and digests `table`'s rows as this side holds them.
    pub async fn tally(&mut self, table: &Table) -> Result<Tally> {
        let mut tally = Tally::default();
        match self {
            Conn::Sqlite(c) => {
                let select = sqlite::select(table);
                let mut rows = std::pin::pin!(sqlite::rows(c, &select, table));
                while let Some(row) = rows.try_next().await? {
                    tally.add(&row);
                }
            }
            Conn::Pg(c) => {
                let select = postgres::select(table);
                let mut rows = std::pin::pin!(postgres::rows(c, &select, table));
                while let Some(row) = rows.try_next().await? {
                    tally.add(&row);
                }
            }
        }
        Ok(tally)
    }

    /// Records `table` as carried with the source's `tally`.
    pub async fn record(&mut self, table: &Table, tally: &Tally) -> Result<()> {
        let sql = format!("INSERT INTO {LEDGER} (name, rows, digest) VALUES ($1, $2, $3)");
        let (name, rows, digest) = (&table.name, tally.rows as i64, tally.digest());
        on_either!(self, c => { sqlx::query(&sql).bind(name).bind(rows).bind(&digest).execute(&mut *c).await?; });
        Ok(())
    }

    /// The carried tables: (name, rows, digest).
    pub async fn ledger(&mut self) -> Result<Vec<(String, i64, String)>> {
        let sql = format!("SELECT name, rows, digest FROM {LEDGER} WHERE name <> $1");
        Ok(on_either!(self, c => sqlx::query_as(&sql).bind(SOURCE_ROW).fetch_all(&mut *c).await?))
    }

    pub async fn ledger_source(&mut self) -> Result<Option<String>> {
        let sql = format!("SELECT digest FROM {LEDGER} WHERE name = $1");
        Ok(on_either!(self, c => sqlx::query_scalar(&sql).bind(SOURCE_ROW).fetch_optional(&mut *c).await?))
    }

    /// Holds the target (`reason`), or with `None` releases it.
    pub async fn set_hold(&mut self, reason: Option<&str>) -> Result<()> {
        let sql = "UPDATE cluster_state SET held = $1, held_reason = $2, held_since = $3 WHERE id = 1";
        let (held, since) = (reason.is_some(), reason.map(|_| Utc::now()));
        on_either!(self, c => { sqlx::query(sql).bind(held).bind(reason).bind(since).execute(&mut *c).await?; });
        Ok(())
    }

    pub async fn set_ledger_source(&mut self, source: &str) -> Result<()> {
        let sql = format!("INSERT INTO {LEDGER} (name, rows, digest) VALUES ($1, 0, $2)");
        on_either!(self, c => { sqlx::query(&sql).bind(SOURCE_ROW).bind(source).execute(&mut *c).await?; });
        Ok(())
    }
}
