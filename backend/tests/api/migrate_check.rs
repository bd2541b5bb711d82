//! `trellis migrate --check`: on a database a release ago (every migration but this release's
//! newest), it reports the pending one as applied to a copy, with its time, and changes nothing;
//! on an up-to-date database it says nothing is pending.

use crate::backup::{stderr, trellis};
use crate::common::{on_both, Backend};
use serde_json::Value;
use sqlx::migrate::Migrate;
use sqlx::Connection;

/// The database at `url` migrated up to, not including, this release's newest migration.
async fn one_release_behind(url: &str) -> i64 {
    let newest = trellis::store::newest_migration(if url.starts_with("postgres") { "postgres" } else { "sqlite" });
    if url.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        apply_before(&mut conn, &sqlx::migrate!("../migrations/postgres"), newest).await;
    } else {
        let options: sqlx::sqlite::SqliteConnectOptions =
            url.parse::<sqlx::sqlite::SqliteConnectOptions>().unwrap().create_if_missing(true);
        let mut conn = sqlx::ConnectOptions::connect(&options).await.unwrap();
        apply_before(&mut conn, &sqlx::migrate!("../migrations/sqlite"), newest).await;
    }
    newest
}

async fn apply_before<C: Migrate + Send>(conn: &mut C, migrator: &sqlx::migrate::Migrator, newest: i64) {
    conn.ensure_migrations_table().await.unwrap();
    for migration in migrator.iter().filter(|m| m.version < newest) {
        conn.apply(migration).await.unwrap();
    }
}

async fn applied(url: &str) -> Vec<i64> {
    let sql = "SELECT version FROM _sqlx_migrations ORDER BY version";
    if url.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap()
    } else {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap()
    }
}

on_both!(the_pending_migration_is_tried_on_a_copy_and_nothing_changes);

async fn the_pending_migration_is_tried_on_a_copy_and_nothing_changes(backend: Backend) {
    let (url, dir) = crate::common::fresh_database(backend).await;
    let newest = one_release_behind(&url).await;
    let before = applied(&url).await;
    assert!(!before.contains(&newest));
    let checked = trellis(&url, dir.path(), &["migrate", "--check", "-o", "json"]).await;
    assert!(checked.status.success(), "{}", stderr(&checked));
    let report: Value = serde_json::from_slice(&checked.stdout).unwrap();
    let pending = report["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{report}");
    assert_eq!(pending[0]["version"], newest);
    assert_eq!(pending[0]["outcome"], "applied");
    assert!(pending[0]["ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(applied(&url).await, before, "the database itself is not changed");

    assert!(trellis(&url, dir.path(), &["migrate"]).await.status.success());
    let table = trellis(&url, dir.path(), &["migrate", "--check"]).await;
    assert!(table.status.success(), "{}", stderr(&table));
    assert!(String::from_utf8_lossy(&table.stdout).contains("nothing is pending"));
}
