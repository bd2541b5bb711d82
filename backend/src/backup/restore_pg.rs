//! Restoring a Postgres archive (see [`super::archive`]) into an empty database, in one
//! transaction: a failure or a kill leaves the target as it was.
//!
//! The schema is made as the backup's release made it: this build's migrations up to the
//! backup's schema version, run as written (the migrations table's rows come from the archive
//! itself). Then each table's rows, in the archive's order (referenced tables first), in batches
//! through `json_populate_recordset`, which reads each value as its column's type the way
//! `row_to_json` wrote it. Later migrations are applied afterwards, as at any start.

use super::archive::GZIP_MAGIC;
use super::restore::refuse_if_served;
use super::sqlite::quoted;
use super::Manifest;
use crate::config::DatabaseConfig;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use flate2::read::GzDecoder;
use serde::Deserialize;
use sqlx::{Connection, PgConnection, Postgres, Transaction};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Rows sent to Postgres at once (fewer when they are large, see `MAX_BATCH_BYTES`).
const BATCH_ROWS: usize = 1_000;
const MAX_BATCH_BYTES: usize = 8 << 20;

/// sqlx's own migrations table, as its migrator makes it.
const MIGRATIONS_TABLE: &str = "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, \
    description TEXT NOT NULL, installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL, \
    checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)";

/// What the loader needs of a line; rows are passed on as the text they are.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Line {
    Backup(serde::de::IgnoredAny),
    Table(Head),
    Row(serde::de::IgnoredAny),
    End(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct Head {
    name: String,
    columns: Vec<HeadColumn>,
}

#[derive(Deserialize)]
struct HeadColumn {
    name: String,
    #[serde(rename = "type")]
    kind: String,
}

/// Restores `file` into the database at `db`; says what was dropped when `replace` cleared it.
/// With `hold` (the reason), the same transaction also applies this release's later migrations,
/// forgets the original's processes and holds the database: it is never there un-held.
pub async fn restore(
    db: &DatabaseConfig,
    file: &Path,
    manifest: &Manifest,
    replace: bool,
    hold: Option<&str>,
) -> Result<Option<String>> {
    let url = db.direct_url();
    let redacted = crate::store::redact_url(url);
    let mut conn = PgConnection::connect(url).await.with_context(|| format!("cannot connect to {redacted}"))?;
    refuse_if_served(&processes(&mut conn).await?, &redacted)?;
    let existing: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
    )
    .fetch_all(&mut conn)
    .await?;
    if !existing.is_empty() && !replace {
        bail!(
            "{redacted} is not empty ({} tables, e.g. `{}`): restore into an empty database, or give --replace to \
             drop the tables of its current schema first (take a backup of it before)",
            existing.len(),
            existing[0]
        );
    }
    let mut tx = conn.begin().await?;
    if replace {
        clear_schema(&mut tx, &existing).await?;
    }
    sqlx::query(MIGRATIONS_TABLE).execute(&mut *tx).await?;
    let migrator = sqlx::migrate!("../migrations/postgres");
    let up = || migrator.iter().filter(|m| m.migration_type.is_up_migration());
    for migration in up().filter(|m| m.version <= manifest.schema_version) {
        apply(&mut tx, migration, false).await?;
    }
    // References are checked at the end, whatever order an archive lists its tables in
    // (archives before format 1's parents-first order listed them by name).
    let references = foreign_keys(&mut tx).await?;
    set_deferrable(&mut tx, &references, true).await?;
    load(file, &mut tx).await?;
    sqlx::query("SET CONSTRAINTS ALL IMMEDIATE").execute(&mut *tx).await.context("checking the rows' references")?;
    set_deferrable(&mut tx, &references, false).await?;
    if let Some(reason) = hold {
        for migration in up().filter(|m| m.version > manifest.schema_version) {
            apply(&mut tx, migration, true).await?;
        }
        sqlx::query("DELETE FROM processes").execute(&mut *tx).await?;
        sqlx::query("UPDATE cluster_state SET held = TRUE, held_reason = $1, held_since = $2 WHERE id = 1")
            .bind(reason)
            .bind(chrono::Utc::now())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    conn.close().await?;
    Ok((!existing.is_empty()).then(|| format!("its {} tables were dropped from {redacted}", existing.len())))
}

/// Runs `migration`'s text; with `record`, also records it as sqlx's migrator would.
async fn apply(tx: &mut Transaction<'_, Postgres>, migration: &sqlx::migrate::Migration, record: bool) -> Result<()> {
    sqlx::raw_sql(&migration.sql)
        .execute(&mut **tx)
        .await
        .with_context(|| format!("making the schema: migration {}", migration.version))?;
    if record {
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, TRUE, $3, 0)",
        )
        .bind(migration.version)
        .bind(migration.description.as_ref())
        .bind(migration.checksum.as_ref())
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Every foreign key of the current schema: (table, constraint), both quoted.
async fn foreign_keys(tx: &mut Transaction<'_, Postgres>) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT conrelid::regclass::text, quote_ident(conname) FROM pg_constraint \
         WHERE contype = 'f' AND connamespace = current_schema()::regnamespace",
    )
    .fetch_all(&mut **tx)
    .await?)
}

async fn set_deferrable(tx: &mut Transaction<'_, Postgres>, keys: &[(String, String)], deferred: bool) -> Result<()> {
    let how = if deferred { "DEFERRABLE INITIALLY DEFERRED" } else { "NOT DEFERRABLE" };
    for (table, constraint) in keys {
        sqlx::query(&format!("ALTER TABLE {table} ALTER CONSTRAINT {constraint} {how}")).execute(&mut **tx).await?;
    }
    Ok(())
}

/// Drops what Trellis's migrations make in the current schema: its tables and functions.
async fn clear_schema(tx: &mut Transaction<'_, Postgres>, tables: &[String]) -> Result<()> {
    for table in tables {
        sqlx::query(&format!("DROP TABLE IF EXISTS {} CASCADE", quoted(table))).execute(&mut **tx).await?;
    }
    let functions: Vec<String> = sqlx::query_scalar(
        "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace \
         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')",
    )
    .fetch_all(&mut **tx)
    .await?;
    for function in functions {
        sqlx::query(&format!("DROP FUNCTION IF EXISTS {function} CASCADE")).execute(&mut **tx).await?;
    }
    Ok(())
}

async fn processes(conn: &mut PgConnection) -> Result<Vec<(String, String, i64, DateTime<Utc>)>> {
    let has_table: bool =
        sqlx::query_scalar("SELECT to_regclass('processes') IS NOT NULL").fetch_one(&mut *conn).await?;
    if !has_table {
        return Ok(Vec::new());
    }
    Ok(sqlx::query_as("SELECT id, host, pid, last_seen FROM processes").fetch_all(&mut *conn).await?)
}

/// Streams the archive's rows into their tables.
async fn load(file: &Path, tx: &mut Transaction<'_, Postgres>) -> Result<()> {
    let mut reader = File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut magic = [0u8; 2];
    reader.read_exact(&mut magic)?;
    if magic != GZIP_MAGIC {
        bail!("{} is not a Postgres archive", file.display());
    }
    let reader = File::open(file)?;
    let lines = BufReader::new(GzDecoder::new(BufReader::new(reader))).lines();
    let mut batch = Batch::default();
    for line in lines {
        let line = line.with_context(|| format!("reading {}", file.display()))?;
        let parsed: Line =
            serde_json::from_str(&line).with_context(|| format!("{} has a damaged line", file.display()))?;
        match parsed {
            Line::Backup(_) => {}
            Line::Table(head) => {
                batch.flush(tx).await?;
                let table = quoted(&head.name);
                create_if_foreign(tx, &head).await?;
                // Rows a migration seeded (a settings row, the cluster's state): the archive
                // holds the table as it was.
                sqlx::query(&format!("DELETE FROM {table}"))
                    .execute(&mut **tx)
                    .await
                    .with_context(|| format!("the archive names a table this schema lacks: {table}"))?;
                batch.insert = Some(insert_statement(&mut *tx, &table).await?);
                batch.table = Some(table);
            }
            Line::Row(_) => {
                batch.bytes += line.len();
                batch.rows.push(line);
                if batch.rows.len() >= BATCH_ROWS || batch.bytes >= MAX_BATCH_BYTES {
                    batch.flush(tx).await?;
                }
            }
            Line::End(_) => return batch.flush(tx).await,
        }
    }
    bail!("{} is truncated: it ends before its closing line", file.display())
}

/// A table no migration makes (one the database's owner added beside Trellis's) is made as the
/// archive describes it: its columns and their types.
async fn create_if_foreign(tx: &mut Transaction<'_, Postgres>, head: &Head) -> Result<()> {
    let exists: bool =
        sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL").bind(quoted(&head.name)).fetch_one(&mut **tx).await?;
    if exists {
        return Ok(());
    }
    // A type is spliced into the statement: only what `format_type` writes may pass.
    let plain = |kind: &str| kind.chars().all(|c| c.is_ascii_alphanumeric() || " _[](),".contains(c));
    if let Some(bad) = head.columns.iter().find(|c| !plain(&c.kind)) {
        bail!("the archive's table {} has a column type that is not a type: `{}`", head.name, bad.kind);
    }
    let columns: Vec<String> = head.columns.iter().map(|c| format!("{} {}", quoted(&c.name), c.kind)).collect();
    sqlx::query(&format!("CREATE TABLE {} ({})", quoted(&head.name), columns.join(", ")))
        .execute(&mut **tx)
        .await
        .with_context(|| format!("making the table {} the archive holds", head.name))?;
    Ok(())
}

/// The statement loading `table`'s archived rows. `row_to_json` writes a JSON `null` value and
/// SQL NULL alike, so a JSON column that cannot be NULL gets the JSON `null` it must have held.
pub(crate) async fn insert_statement(tx: &mut PgConnection, table: &str) -> Result<String> {
    let columns: Vec<(String, String, bool)> = sqlx::query_as(
        "SELECT quote_ident(attname), format_type(atttypid, atttypmod), attnotnull FROM pg_attribute \
         WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
    )
    .bind(table)
    .fetch_all(&mut *tx)
    .await?;
    let names: Vec<&str> = columns.iter().map(|(name, ..)| name.as_str()).collect();
    let values: Vec<String> = columns
        .iter()
        .map(|(name, kind, not_null)| match (kind.as_str(), not_null) {
            ("json" | "jsonb", true) => format!("COALESCE(r.{name}, 'null'::{kind})"),
            _ => format!("r.{name}"),
        })
        .collect();
    Ok(format!(
        "INSERT INTO {table} ({}) SELECT {} FROM json_populate_recordset(NULL::{table}, \
         (SELECT json_agg((line::json)->'row') FROM unnest($1::text[]) AS line)) AS r",
        names.join(", "),
        values.join(", ")
    ))
}

/// Rows of one table waiting to be inserted.
#[derive(Default)]
struct Batch {
    table: Option<String>,
    insert: Option<String>,
    rows: Vec<String>,
    bytes: usize,
}

impl Batch {
    async fn flush(&mut self, tx: &mut Transaction<'_, Postgres>) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let (Some(table), Some(insert)) = (&self.table, &self.insert) else {
            bail!("the archive has rows before any table")
        };
        sqlx::query(insert)
            .bind(&self.rows)
            .execute(&mut **tx)
            .await
            .with_context(|| format!("loading the rows of {table}"))?;
        self.rows.clear();
        self.bytes = 0;
        Ok(())
    }
}
