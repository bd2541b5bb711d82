//! SQLite backups: the copy is itself a SQLite database, so Trellis opens it as it is.
//!
//! `VACUUM INTO` writes the copy from one read transaction: in WAL mode writers go on beside it
//! (a checkpoint waits for it to finish), and the copy is compact and consistent. Then, on the
//! copy alone, each table's rows are counted and digested, and the [`Manifest`] is stored in the
//! table `_trellis_backup` (one row, JSON): a name no migration uses, so a server started on the
//! copy ignores it.
//!
//! A table's digest is the SHA-256 of its column names joined by `,` and a newline, then of each
//! row in rowid order as SQLite's `quote()` of each column joined by `,`, each followed by a
//! newline: every value (text, number, blob, NULL) has one such form, so an edited row changes it.

use super::{check_tables, Manifest, TableDigest};
use crate::digest::hex;
use anyhow::{bail, Context, Result};
use chrono::Utc;
use futures_util::TryStreamExt;
use sha2::{Digest, Sha256};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{ConnectOptions, Connection, SqliteConnection};
use std::io::Read;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

pub const EXTENSION: &str = "sqlite";
/// The first 16 bytes of every SQLite database file.
pub const HEADER: &[u8; 16] = b"SQLite format 3\0";
pub(super) const MANIFEST_TABLE: &str = "_trellis_backup";

/// Copies the database at `url` into `copy` (an empty file) and returns its manifest.
pub async fn create(url: &str, copy: &Path) -> Result<Manifest> {
    let options = SqliteConnectOptions::from_str(url)?.busy_timeout(Duration::from_secs(10));
    let source_path = options.get_filename().to_owned();
    if !source_path.is_file() {
        bail!("there is no SQLite database at {}: check DATABASE_URL", source_path.display());
    }
    let mut source = options.connect().await.with_context(|| format!("cannot open {url}"))?;
    if schema_version(&mut source).await?.is_none() {
        bail!("{} is not a Trellis database (it has no migrations table): check DATABASE_URL", source_path.display());
    }
    let created_at = Utc::now();
    let copy_text = copy.to_str().context("the backup's path must be UTF-8")?;
    sqlx::query("VACUUM INTO ?").bind(copy_text).execute(&mut source).await.context("copying the database")?;
    source.close().await?;

    let options = SqliteConnectOptions::new().filename(copy).journal_mode(SqliteJournalMode::Delete);
    let mut copy = options.connect().await.context("opening the copy")?;
    let schema_version = schema_version(&mut copy).await?.unwrap_or(0);
    let manifest = Manifest::new("sqlite", schema_version, created_at, digest_tables(&mut copy).await?);
    sqlx::query(&format!("CREATE TABLE {MANIFEST_TABLE} (manifest TEXT NOT NULL)")).execute(&mut copy).await?;
    sqlx::query(&format!("INSERT INTO {MANIFEST_TABLE} (manifest) VALUES (?)"))
        .bind(serde_json::to_string(&manifest)?)
        .execute(&mut copy)
        .await?;
    copy.close().await?;
    Ok(manifest)
}

/// Checks the SQLite backup `file` whole (length, `integrity_check`, every table's digest).
pub async fn inspect(file: &Path) -> Result<Manifest> {
    check_length(file)?;
    let options = SqliteConnectOptions::new().filename(file).read_only(true).immutable(true);
    let mut conn = options.connect().await.with_context(|| format!("cannot open {} as SQLite", file.display()))?;
    let verdict: String = sqlx::query_scalar("PRAGMA integrity_check(1)")
        .fetch_one(&mut conn)
        .await
        .with_context(|| format!("{} is damaged: SQLite cannot check it", file.display()))?;
    if verdict != "ok" {
        bail!("{} is damaged: SQLite's integrity check says: {verdict}", file.display());
    }
    let manifest = read_manifest(&mut conn, file).await?;
    check_tables(file, &manifest.tables, &digest_tables(&mut conn).await?)?;
    Ok(manifest)
}

async fn read_manifest(conn: &mut SqliteConnection, file: &Path) -> Result<Manifest> {
    let has_table: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)")
            .bind(MANIFEST_TABLE)
            .fetch_one(&mut *conn)
            .await?;
    if !has_table {
        bail!(
            "{} is not a Trellis backup: it is a SQLite database without a backup manifest (make backups with `trellis backup create`)",
            file.display()
        );
    }
    let text: String = sqlx::query_scalar(&format!("SELECT manifest FROM {MANIFEST_TABLE}"))
        .fetch_one(&mut *conn)
        .await
        .with_context(|| format!("{} has an empty backup manifest", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} has an unreadable backup manifest", file.display()))
}

/// A file shorter than its header's page count was cut off (a copy interrupted, a full disk).
fn check_length(file: &Path) -> Result<()> {
    let mut header = [0u8; 100];
    let mut reader = std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    if reader.read_exact(&mut header).is_err() {
        bail!("{} is truncated: shorter than a SQLite header", file.display());
    }
    let word = |at: usize| u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        size => u64::from(size),
    };
    // The page count is only valid when the change counter matches "version valid for".
    if word(24) != word(92) {
        return Ok(());
    }
    let expected = page_size * u64::from(word(28));
    let actual = std::fs::metadata(file)?.len();
    if actual < expected {
        bail!("{} is truncated: {actual} bytes of {expected}", file.display());
    }
    Ok(())
}

/// The highest migration applied, or `None` when there is no migrations table.
async fn schema_version(conn: &mut SqliteConnection) -> Result<Option<i64>> {
    let has_table: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations')",
    )
    .fetch_one(&mut *conn)
    .await?;
    if !has_table {
        return Ok(None);
    }
    let version: Option<i64> =
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success").fetch_one(&mut *conn).await?;
    Ok(Some(version.unwrap_or(0)))
}

/// Every table but the manifest's, by name, with its rows counted and digested.
async fn digest_tables(conn: &mut SqliteConnection) -> Result<Vec<TableDigest>> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         AND name <> ? ORDER BY name",
    )
    .bind(MANIFEST_TABLE)
    .fetch_all(&mut *conn)
    .await?;
    let mut tables = Vec::with_capacity(names.len());
    for name in names {
        tables.push(digest_table(conn, name).await?);
    }
    Ok(tables)
}

async fn digest_table(conn: &mut SqliteConnection, name: String) -> Result<TableDigest> {
    let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?) ORDER BY cid")
        .bind(&name)
        .fetch_all(&mut *conn)
        .await?;
    let mut hasher = Sha256::new();
    hasher.update(format!("{}\n", columns.join(",")));
    let row_text = columns.iter().map(|c| format!("quote({})", quoted(c))).collect::<Vec<_>>().join(" || ',' || ");
    let select = format!("SELECT {row_text} FROM {} ORDER BY rowid", quoted(&name));
    let mut rows = sqlx::query_scalar::<_, String>(&select).fetch(&mut *conn);
    let mut count = 0;
    while let Some(row) = rows.try_next().await? {
        hasher.update(row.as_bytes());
        hasher.update(b"\n");
        count += 1;
    }
    Ok(TableDigest { name, rows: count, sha256: hex(&hasher.finalize()) })
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
