//! What `trellis backup` refuses, on both databases: files that are not whole Trellis backups
//! this build can read, and databases that are not Trellis's; each with a sentence saying what
//! and why, a non-zero exit, and nothing written.

use crate::backup::{listing, stderr, trellis};
use crate::common::{fresh_database, on_both, Backend};
use sqlx::{Connection, SqliteConnection};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A Trellis database with a user in it, and a backup of it in its own folder.
async fn database_and_backup(backend: Backend) -> (String, tempfile::TempDir, tempfile::TempDir, PathBuf) {
    let (url, db_dir) = fresh_database(backend).await;
    let out = tempfile::tempdir().unwrap();
    assert!(trellis(&url, out.path(), &["migrate"]).await.status.success());
    let file = out.path().join("good.backup");
    let created = trellis(&url, out.path(), &["backup", "create", "--to", file.to_str().unwrap()]).await;
    assert!(created.status.success(), "create: {}", stderr(&created));
    (url, db_dir, out, file)
}

/// `verify FILE` fails saying `expected`, and leaves the folder as it was.
async fn refused(url: &str, file: &Path, expected: &str) {
    let folder = file.parent().unwrap();
    let before = listing(folder);
    let verified = trellis(url, folder, &["backup", "verify", file.to_str().unwrap()]).await;
    assert!(!verified.status.success(), "{} is refused", file.display());
    assert!(stderr(&verified).contains(expected), "`{expected}` in: {}", stderr(&verified));
    assert_eq!(listing(folder), before, "verify writes nothing");
}

on_both!(verify_refuses_what_is_not_a_whole_backup_this_build_can_read);

async fn verify_refuses_what_is_not_a_whole_backup_this_build_can_read(backend: Backend) {
    let (url, _db, out, good) = database_and_backup(backend).await;
    let bytes = std::fs::read(&good).unwrap();
    let verified = trellis(&url, out.path(), &["backup", "verify", good.to_str().unwrap()]).await;
    assert!(verified.status.success(), "{}", stderr(&verified));

    let text = out.path().join("notes.txt");
    std::fs::write(&text, "not a backup\n").unwrap();
    refused(&url, &text, "is not a Trellis backup").await;

    let truncated = out.path().join("truncated.backup");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    refused(&url, &truncated, "is truncated").await;

    let (tampered, newer) = (out.path().join("tampered.backup"), out.path().join("newer.backup"));
    match backend {
        Backend::Sqlite => {
            let foreign = out.path().join("other-product.sqlite");
            run_sql(&foreign, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello')").await;
            refused(&url, &foreign, "is not a Trellis backup").await;
            std::fs::copy(&good, &tampered).unwrap();
            run_sql(&tampered, "UPDATE _sqlx_migrations SET description = 'edited' WHERE version = 1").await;
            std::fs::copy(&good, &newer).unwrap();
            run_sql(&newer, "UPDATE _trellis_backup SET manifest = json_set(manifest, '$.schema_version', 9999)").await;
        }
        Backend::Postgres => {
            let archive = gunzip(&bytes);
            let foreign = out.path().join("other-product.gz");
            std::fs::write(&foreign, gzip("{\"name\": \"someone else's\"}\n")).unwrap();
            refused(&url, &foreign, "is not a Trellis backup").await;
            std::fs::write(&tampered, gzip(&archive.replacen("\"foundation\"", "\"edited\"", 1))).unwrap();
            let header_edited = archive.replacen("\"schema_version\":", "\"schema_version\":9999, \"was\":", 1);
            std::fs::write(&newer, gzip(&header_edited)).unwrap();
        }
    }
    refused(&url, &tampered, "has been altered or damaged").await;
    refused(&url, &newer, "was made by a newer Trellis").await;
}

on_both!(create_refuses_a_database_that_is_not_trellis_and_leaves_nothing);

async fn create_refuses_a_database_that_is_not_trellis_and_leaves_nothing(backend: Backend) {
    let (trellis_url, _db, out, previous) = database_and_backup(backend).await;
    let before = std::fs::read(&previous).unwrap();
    let (foreign_url, _foreign_dir) = fresh_database(backend).await;
    if let Backend::Sqlite = backend {
        run_sql(Path::new(foreign_url.trim_start_matches("sqlite://")), "CREATE TABLE notes (body TEXT)").await;
    }
    let created = trellis(&foreign_url, out.path(), &["backup", "create", "--to", previous.to_str().unwrap()]).await;
    assert!(!created.status.success());
    assert!(stderr(&created).contains("is not a Trellis database"), "{}", stderr(&created));
    assert_eq!(std::fs::read(&previous).unwrap(), before, "the previous backup of that name is whole");
    assert_eq!(listing(out.path()), ["good.backup"], "no temporary file is left");

    let nowhere = out.path().join("missing-folder").join("x.backup");
    let created = trellis(&trellis_url, out.path(), &["backup", "create", "--to", nowhere.to_str().unwrap()]).await;
    assert!(!created.status.success());
    assert!(stderr(&created).contains("does not exist"), "{}", stderr(&created));

    let here = tempfile::tempdir().unwrap();
    let created = trellis(&trellis_url, here.path(), &["backup", "create"]).await;
    assert!(created.status.success(), "{}", stderr(&created));
    let names = listing(here.path());
    let extension = if let Backend::Sqlite = backend { ".sqlite" } else { ".jsonl.gz" };
    assert!(names.len() == 1 && names[0].starts_with("trellis-backup-") && names[0].ends_with(extension), "{names:?}");
}

/// Runs `sql` on the SQLite file at `path` (created if missing).
async fn run_sql(path: &Path, sql: &str) {
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut conn = SqliteConnection::connect(&url).await.unwrap();
    sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
}

fn gunzip(bytes: &[u8]) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes).read_to_string(&mut text).unwrap();
    text
}

fn gzip(text: &str) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text.as_bytes()).unwrap();
    encoder.finish().unwrap()
}
