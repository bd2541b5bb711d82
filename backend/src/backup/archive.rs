//! Postgres backups: an archive of every table in the schema Trellis migrates, read in one
//! `REPEATABLE READ READ ONLY` transaction, so every table is seen at the same moment while
//! servers go on writing.
//!
//! # Format (version 1)
//!
//! A gzip stream (its CRC and length catch a cut or flipped byte) of UTF-8 JSON lines. Each line
//! is an object with one key naming its kind:
//!
//! ```text
//! {"backup": {"magic":"trellis-backup","format":1,"backend":"postgres","schema_version":28,"created_at":"…","tables":[]}}
//! {"table": {"name":"instances","columns":[{"name":"id","type":"uuid"}, …]}}
//! {"row": {"id":"…", …}}                       one per row: Postgres's `row_to_json`, keyed by column
//! …                                            the next "table", its rows, …
//! {"end": {"tables":[{"name":"instances","rows":12,"sha256":"…"}, …]}}
//! ```
//!
//! Rows name their columns and the table line gives each column's Postgres type, so a restore
//! into either backend can read them without this build's schema. Tables come parents first
//! (each after the tables its foreign keys reference), so a restore loads them in file order. A table's digest is the SHA-256
//! of its `table` line and its `row` lines, as written, each with its newline. The counts and
//! digests come last, as they are known only once every row is written: an archive without its
//! `end` line is truncated. The opening line carries the rest of the [`Manifest`].

use super::sqlite::quoted;
use super::{check_tables, Manifest, TableDigest};
use crate::config::DatabaseConfig;
use crate::digest::hex;
use anyhow::{bail, Context, Result};
use chrono::Utc;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::{Connection, PgConnection};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

pub const EXTENSION: &str = "jsonl.gz";
pub const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// One line of the archive, as read (a row's values are skipped: only its bytes are digested).
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Line {
    Backup(Manifest),
    Table(TableHead),
    Row(serde::de::IgnoredAny),
    End(Ending),
}

/// The lines the writer makes itself (rows come from Postgres as text).
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Written<'a> {
    Backup(&'a Manifest),
    Table(&'a TableHead),
    End(&'a Ending),
}

#[derive(Serialize, Deserialize)]
struct TableHead {
    name: String,
    columns: Vec<Column>,
}

#[derive(Serialize, Deserialize)]
struct Column {
    name: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct Ending {
    tables: Vec<TableDigest>,
}

/// Writes the archive of the database at `config` into `path` and returns its manifest.
pub async fn create(config: &DatabaseConfig, path: &Path) -> Result<Manifest> {
    // Straight to Postgres when a pooler is in front: one long transaction is all this needs.
    let url = config.direct_url();
    let redacted = crate::store::redact_url(url);
    let mut conn = PgConnection::connect(url).await.with_context(|| format!("cannot connect to {redacted}"))?;
    sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").execute(&mut conn).await?;
    let created_at = Utc::now();
    let schema_version = schema_version(&mut conn, &redacted).await?;
    let tables = tables_parents_first(&mut conn).await?;
    // The staged file exists already, empty and private (`files.rs`).
    let file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut archive = ArchiveWriter::new(file);
    archive.line(&Written::Backup(&Manifest::new("postgres", schema_version, created_at, vec![])))?;
    for table in tables {
        copy_table(&mut conn, &mut archive, table).await?;
    }
    sqlx::query("COMMIT").execute(&mut conn).await?;
    conn.close().await?;
    archive.finish(schema_version, created_at)
}

async fn schema_version(conn: &mut PgConnection, redacted: &str) -> Result<i64> {
    let has_table: bool =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL").fetch_one(&mut *conn).await?;
    if !has_table {
        bail!("{redacted} is not a Trellis database (it has no migrations table): check DATABASE_URL");
    }
    let version: Option<i64> =
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success").fetch_one(&mut *conn).await?;
    Ok(version.unwrap_or(0))
}

/// The schema's tables, each after every table its foreign keys point to (by name among
/// equals), so a restore loads them in the archive's order without breaking a reference.
pub(crate) async fn tables_parents_first(conn: &mut PgConnection) -> Result<Vec<String>> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
    )
    .fetch_all(&mut *conn)
    .await?;
    let references: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c \
         JOIN pg_class t ON t.oid = c.conrelid WHERE c.contype = 'f' AND t.relnamespace = current_schema()::regnamespace",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(parents_first(tables, &references))
}

/// `tables` ordered so each comes after those it references (`(table, referenced)` pairs);
/// a table in a cycle, or referencing itself, keeps its place among the rest.
pub fn parents_first(mut tables: Vec<String>, references: &[(String, String)]) -> Vec<String> {
    let unquoted = |name: &str| name.trim_matches('"').to_owned();
    let refs: Vec<(String, String)> =
        references.iter().map(|(t, r)| (unquoted(t), unquoted(r))).filter(|(t, r)| t != r).collect();
    let mut ordered = Vec::with_capacity(tables.len());
    while !tables.is_empty() {
        let ready =
            tables.iter().position(|t| !refs.iter().any(|(from, to)| from == t && tables.contains(to))).unwrap_or(0);
        ordered.push(tables.remove(ready));
    }
    ordered
}

async fn copy_table(conn: &mut PgConnection, archive: &mut ArchiveWriter, name: String) -> Result<()> {
    let quoted = quoted(&name);
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute \
         WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
    )
    .bind(&quoted)
    .fetch_all(&mut *conn)
    .await?;
    let columns = columns.into_iter().map(|(name, kind)| Column { name, kind }).collect();
    archive.begin_table(TableHead { name, columns })?;
    // `r.*` is the whole row even when the table has a column named `r` (a bare `r` would be it).
    let select = format!("SELECT json_build_object('row', row_to_json(r.*))::text FROM {quoted} r");
    let mut rows = sqlx::query_scalar::<_, String>(&select).fetch(&mut *conn);
    while let Some(row) = rows.try_next().await? {
        archive.row(&row)?;
    }
    Ok(())
}

/// Counts and digests each table's lines, in the order they are written (or read).
#[derive(Default)]
struct TableDigests {
    done: Vec<TableDigest>,
    current: Option<(Sha256, String, u64)>,
}

impl TableDigests {
    fn begin(&mut self, name: String) {
        self.end();
        self.current = Some((Sha256::new(), name, 0));
    }

    /// Digests a line of the current table (its `table` line or a row), if any.
    fn line(&mut self, line: &[u8]) {
        if let Some((hasher, _, _)) = &mut self.current {
            hasher.update(line);
            hasher.update(b"\n");
        }
    }

    /// Counts a row; false when no table has begun.
    fn row(&mut self) -> bool {
        self.current.as_mut().map(|(_, _, rows)| *rows += 1).is_some()
    }

    fn end(&mut self) {
        if let Some((hasher, name, rows)) = self.current.take() {
            self.done.push(TableDigest { name, rows, sha256: hex(&hasher.finalize()) });
        }
    }

    fn finish(mut self) -> Vec<TableDigest> {
        self.end();
        self.done
    }
}

/// Writes lines into the gzip stream, digesting each table's lines as they go.
struct ArchiveWriter {
    out: GzEncoder<BufWriter<File>>,
    digests: TableDigests,
}

impl ArchiveWriter {
    fn new(file: File) -> ArchiveWriter {
        let out = GzEncoder::new(BufWriter::new(file), flate2::Compression::fast());
        ArchiveWriter { out, digests: TableDigests::default() }
    }

    fn line(&mut self, line: &Written<'_>) -> Result<()> {
        let text = serde_json::to_string(line)?;
        self.raw(&text)
    }

    fn raw(&mut self, text: &str) -> Result<()> {
        if text.contains('\n') {
            bail!("a line of the archive holds a newline, which its format cannot carry");
        }
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.digests.line(text.as_bytes());
        Ok(())
    }

    fn begin_table(&mut self, head: TableHead) -> Result<()> {
        self.digests.begin(head.name.clone());
        self.line(&Written::Table(&head))
    }

    fn row(&mut self, text: &str) -> Result<()> {
        self.digests.row();
        self.raw(text)
    }

    fn finish(mut self, schema_version: i64, created_at: chrono::DateTime<Utc>) -> Result<Manifest> {
        let tables = std::mem::take(&mut self.digests).finish();
        self.line(&Written::End(&Ending { tables: tables.clone() }))?;
        let file = self.out.finish()?.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(Manifest::new("postgres", schema_version, created_at, tables))
    }
}

/// Reads the archive `file` to its end, recomputing every table's count and digest.
pub fn inspect(file: &Path) -> Result<Manifest> {
    let reader = File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut lines = BufReader::new(GzDecoder::new(BufReader::new(reader))).split(b'\n');
    let mut next = || -> Result<Option<Vec<u8>>> { lines.next().transpose().map_err(|e| unreadable(file, e)) };
    let not_ours =
        || anyhow::anyhow!("{} is not a Trellis backup: a gzip file without a Trellis backup header", file.display());
    let first = next()?.ok_or_else(not_ours)?;
    let Ok(Line::Backup(mut manifest)) = serde_json::from_slice(&first) else { return Err(not_ours()) };
    let mut digests = TableDigests::default();
    loop {
        let Some(line) = next()? else { bail!("{} is truncated: it ends before its closing line", file.display()) };
        let parsed: Line =
            serde_json::from_slice(&line).with_context(|| format!("{} has a damaged line", file.display()))?;
        match parsed {
            Line::Table(head) => digests.begin(head.name),
            Line::Row(_) => {
                if !digests.row() {
                    bail!("{} is damaged: a row before any table", file.display());
                }
            }
            Line::End(ending) => {
                if next()?.is_some() {
                    bail!("{} has been altered: lines follow its closing line", file.display());
                }
                check_tables(file, &ending.tables, &digests.finish())?;
                manifest.tables = ending.tables;
                return Ok(manifest);
            }
            Line::Backup(_) => bail!("{} is damaged: a second header line", file.display()),
        }
        digests.line(&line);
    }
}

fn unreadable(file: &Path, error: std::io::Error) -> anyhow::Error {
    match error.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            anyhow::anyhow!("{} is truncated: its compressed data ends early", file.display())
        }
        _ => anyhow::anyhow!("{} is damaged: {error}", file.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::parents_first;

    #[test]
    fn referenced_tables_come_first_and_the_rest_keep_their_order() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let refs = [
            ("alert_attempts".to_owned(), "alert_deliveries".to_owned()),
            ("alert_deliveries".to_owned(), "\"alert_rules\"".to_owned()),
            ("alert_rules".to_owned(), "workflows".to_owned()),
            ("instances".to_owned(), "instances".to_owned()),
        ];
        let tables = names(&["alert_attempts", "alert_deliveries", "alert_rules", "instances", "workflows"]);
        assert_eq!(
            parents_first(tables, &refs),
            names(&["instances", "workflows", "alert_rules", "alert_deliveries", "alert_attempts"])
        );
    }
}
