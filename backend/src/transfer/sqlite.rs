//! The SQLite side of a transfer: which columns it declares TEXT, rows read by the kinds the
//! Postgres side gives, and rows written as Trellis itself writes them on SQLite (uuids as 16
//! bytes unless the column is TEXT, times in sqlx's RFC 3339, booleans as 0/1, JSON as text).

use super::columns::{bytes_text, time_text, Column, Kind, Row, Table};
use crate::backup::sqlite::quoted;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row as _, SqliteConnection, TypeInfo, ValueRef};

/// `table` as SQLite has it: the same columns as the Postgres side's `pg`, or a refusal.
pub async fn matching(conn: &mut SqliteConnection, pg: &Table) -> Result<Table> {
    let declared: Vec<(String, String)> = sqlx::query_as("SELECT name, type FROM pragma_table_info(?) ORDER BY cid")
        .bind(&pg.name)
        .fetch_all(&mut *conn)
        .await?;
    if declared.is_empty() {
        bail!("the SQLite database has no table `{}`: are both databases at the same schema version?", pg.name);
    }
    let mut columns = Vec::with_capacity(pg.columns.len());
    for column in &pg.columns {
        let Some((_, kind)) = declared.iter().find(|(name, _)| *name == column.name) else {
            bail!("the SQLite table `{}` has no column `{}`", pg.name, column.name);
        };
        columns.push(Column { sqlite_text: kind.eq_ignore_ascii_case("TEXT"), ..column.clone() });
    }
    if let Some((extra, _)) = declared.iter().find(|(name, _)| !pg.columns.iter().any(|c| c.name == *name)) {
        bail!("the SQLite table `{}` has a column `{extra}` the Postgres one lacks", pg.name);
    }
    Ok(Table { name: pg.name.clone(), columns })
}

/// The statement [`rows`] runs for `table` (the caller keeps it while the rows stream).
pub fn select(table: &Table) -> String {
    let columns: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
    format!("SELECT {} FROM {}", columns.join(", "), quoted(&table.name))
}

/// `table`'s rows, canonical, read by `select`.
pub fn rows<'c>(
    conn: &'c mut SqliteConnection,
    select: &'c str,
    table: &Table,
) -> impl Stream<Item = Result<Row>> + 'c {
    let table = table.clone();
    sqlx::query(select).fetch(conn).map(move |row| {
        let row = row?;
        let mut out = Row::new();
        for (i, column) in table.columns.iter().enumerate() {
            let value = read(&row, i, column).with_context(|| format!("{}.{}", table.name, column.name))?;
            out.insert(column.name.clone(), value);
        }
        Ok(out)
    })
}

fn read(row: &SqliteRow, i: usize, column: &Column) -> Result<Value> {
    let raw = row.try_get_raw(i)?;
    if raw.is_null() {
        return Ok(Value::Null);
    }
    let blob = raw.type_info().name() == "BLOB";
    Ok(match column.kind {
        Kind::Uuid if blob => Value::String(row.try_get::<uuid::Uuid, _>(i)?.hyphenated().to_string()),
        Kind::Uuid => Value::String(uuid::Uuid::parse_str(&row.try_get::<String, _>(i)?)?.hyphenated().to_string()),
        Kind::Time => Value::String(time_text(row.try_get::<DateTime<Utc>, _>(i)?)),
        Kind::Bool => Value::Bool(row.try_get::<bool, _>(i)?),
        Kind::Int => Value::from(row.try_get::<i64, _>(i)?),
        Kind::Float => Value::from(row.try_get::<f64, _>(i)?),
        Kind::Text => Value::String(row.try_get::<String, _>(i)?),
        Kind::Json if blob => serde_json::from_slice(&row.try_get::<Vec<u8>, _>(i)?)?,
        Kind::Json => serde_json::from_str(&row.try_get::<String, _>(i)?)?,
        Kind::Bytes => Value::String(bytes_text(&row.try_get::<Vec<u8>, _>(i)?)),
    })
}

/// Inserts canonical `rows` into `table`, one statement per row (SQLite runs them in-process).
pub async fn insert(conn: &mut SqliteConnection, table: &Table, rows: &[Row]) -> Result<()> {
    let columns: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
    let marks = vec!["?"; columns.len()].join(", ");
    let insert = format!("INSERT INTO {} ({}) VALUES ({marks})", quoted(&table.name), columns.join(", "));
    for row in rows {
        let mut query = sqlx::query(&insert);
        for column in &table.columns {
            let value = row.get(&column.name).unwrap_or(&Value::Null);
            query = bind(query, column, value).with_context(|| format!("{}.{}", table.name, column.name))?;
        }
        query.execute(&mut *conn).await.with_context(|| format!("writing a row of {}", table.name))?;
    }
    Ok(())
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>;

fn bind<'q>(query: Query<'q>, column: &Column, value: &Value) -> Result<Query<'q>> {
    if value.is_null() {
        // A NOT NULL JSON column held JSON `null` (see `columns`).
        let json_null = (column.kind == Kind::Json && column.not_null).then(|| "null".to_owned());
        return Ok(query.bind(json_null));
    }
    let text = || value.as_str().map(str::to_owned).ok_or_else(|| anyhow::anyhow!("expected text, got {value}"));
    Ok(match column.kind {
        Kind::Uuid if column.sqlite_text => query.bind(text()?),
        Kind::Uuid => query.bind(uuid::Uuid::parse_str(&text()?)?),
        Kind::Time => query.bind(DateTime::parse_from_rfc3339(&text()?)?.with_timezone(&Utc)),
        Kind::Bool => query.bind(value.as_bool().ok_or_else(|| anyhow::anyhow!("expected a boolean, got {value}"))?),
        Kind::Int => query.bind(value.as_i64().ok_or_else(|| anyhow::anyhow!("expected an integer, got {value}"))?),
        Kind::Float => query.bind(value.as_f64().ok_or_else(|| anyhow::anyhow!("expected a number, got {value}"))?),
        Kind::Text => query.bind(text()?),
        Kind::Json => query.bind(serde_json::to_string(value)?),
        Kind::Bytes => {
            let hex = text()?;
            let digits = hex.strip_prefix("\\x").unwrap_or(&hex);
            query.bind(crate::digest::unhex(digits).ok_or_else(|| anyhow::anyhow!("`{hex}` is not hex bytes"))?)
        }
    })
}
