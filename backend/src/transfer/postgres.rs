//! The Postgres side of a transfer: its tables (parents first) and their columns' kinds, rows
//! read as `row_to_json` made canonical, and rows written through `json_populate_recordset`.

use super::columns::{canonical, Kind, Row, Table};
use crate::backup::sqlite::quoted;
use anyhow::{Context, Result};
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use sqlx::PgConnection;
use std::collections::HashMap;

/// Every table of the current schema, parents first, with each column's kind.
pub async fn tables(conn: &mut PgConnection) -> Result<Vec<Table>> {
    let names = crate::backup::archive::tables_parents_first(conn).await?;
    let mut tables = Vec::with_capacity(names.len());
    for name in names {
        let columns: Vec<(String, String, bool)> = sqlx::query_as(
            "SELECT attname::text, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute \
             WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        )
        .bind(quoted(&name))
        .fetch_all(&mut *conn)
        .await?;
        let columns = columns
            .into_iter()
            .map(|(column, pg_type, not_null)| {
                let kind = Kind::of_postgres(&name, &column, &pg_type)?;
                Ok(super::columns::Column { name: column, kind, sqlite_text: false, not_null })
            })
            .collect::<Result<_>>()?;
        tables.push(Table { name, columns });
    }
    Ok(tables)
}

/// The statement [`rows`] runs for `table` (the caller keeps it while the rows stream).
pub fn select(table: &Table) -> String {
    format!("SELECT row_to_json(r.*)::text FROM {} r", quoted(&table.name))
}

/// `table`'s rows, canonical, read by `select`.
pub fn rows<'c>(conn: &'c mut PgConnection, select: &'c str, table: &Table) -> impl Stream<Item = Result<Row>> + 'c {
    let kinds: HashMap<String, Kind> = table.columns.iter().map(|c| (c.name.clone(), c.kind)).collect();
    let name = table.name.clone();
    sqlx::query_scalar::<_, String>(select).fetch(conn).map(move |text| {
        let text = text?;
        let Value::Object(raw) = serde_json::from_str(&text)? else {
            anyhow::bail!("a row of {name} is not an object")
        };
        raw.into_iter()
            .map(|(column, value)| {
                let kind = kinds.get(&column).copied().unwrap_or(Kind::Text);
                Ok((column.clone(), canonical(kind, value).with_context(|| format!("{name}.{column}"))?))
            })
            .collect()
    })
}

/// Inserts canonical `rows` into `table`.
pub async fn insert(conn: &mut PgConnection, table: &Table, rows: &[Row]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let name = quoted(&table.name);
    // A canonical row has one `null` for SQL NULL and JSON null: a NOT NULL JSON column held the latter.
    let columns: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
    let values: Vec<String> = table
        .columns
        .iter()
        .map(|c| match (c.kind, c.not_null) {
            (Kind::Json, true) => format!("COALESCE(r.{}, 'null')", quoted(&c.name)),
            _ => format!("r.{}", quoted(&c.name)),
        })
        .collect();
    let insert = format!(
        "INSERT INTO {name} ({}) SELECT {} FROM json_populate_recordset(NULL::{name}, $1::json) AS r",
        columns.join(", "),
        values.join(", ")
    );
    sqlx::query(&insert)
        .bind(serde_json::to_string(rows)?)
        .execute(conn)
        .await
        .with_context(|| format!("writing the rows of {}", table.name))?;
    Ok(())
}
