//! `trellis backup create | verify`: the real binary against a real database while a server
//! runs on it, on both databases; and every kind of file `verify` must refuse.

use crate::common::{chain, on_both, Backend, TestApp, TEST_MASTER_KEY};
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Output;
use tokio::process::Command;

/// Runs `trellis args` against `database_url` in the folder `cwd`.
pub async fn trellis(database_url: &str, cwd: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_trellis"));
    command.args(args).current_dir(cwd).env("DATABASE_URL", database_url).env("RUST_LOG", "warn").kill_on_drop(true);
    if database_url.starts_with("postgres") {
        command.env("TRELLIS_MASTER_KEY", TEST_MASTER_KEY);
    }
    command.output().await.unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The names in `dir`, sorted: what a command left behind.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

async fn verify_json(database_url: &str, file: &Path) -> Value {
    let verified =
        trellis(database_url, file.parent().unwrap(), &["backup", "verify", "-o", "json", file.to_str().unwrap()])
            .await;
    assert!(verified.status.success(), "verify: {}", stderr(&verified));
    serde_json::from_slice(&verified.stdout).unwrap()
}

fn rows_of(manifest: &Value, table: &str) -> u64 {
    manifest["tables"].as_array().unwrap().iter().find(|t| t["name"] == table).unwrap()["rows"].as_u64().unwrap()
}

on_both!(a_backup_taken_while_instances_run_holds_every_one_finished_before_it);

async fn a_backup_taken_while_instances_run_holds_every_one_finished_before_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let workflow = app.publish(chain()).await;
    let mut finished = Vec::new();
    for _ in 0..5 {
        let id = app.start(&workflow, json!({})).await;
        app.wait_finished(&id).await;
        finished.push(id);
    }
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("during-load.backup");
    let args = ["backup", "create", "--to", file.to_str().unwrap()].map(str::to_owned);
    let (url, cwd) = (app.database_url.clone(), out.path().to_owned());
    let backup = tokio::spawn(async move { trellis(&url, &cwd, &args.each_ref().map(String::as_str)).await });
    let mut started_during = 0;
    while !backup.is_finished() {
        app.start(&workflow, json!({})).await;
        started_during += 1;
    }
    assert!(started_during > 0, "instances were started while the backup ran");
    let created = backup.await.unwrap();
    assert!(created.status.success(), "create: {}", stderr(&created));
    let summary = String::from_utf8_lossy(&created.stdout);
    assert!(summary.contains("during-load.backup") && summary.contains("schema version"), "{summary}");
    assert_eq!(listing(out.path()), ["during-load.backup"], "no temporary file is left");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(out.path().join("during-load.backup")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "only its owner reads a backup (password hashes, sealed secrets)");

    let manifest = verify_json(&app.database_url, &file).await;
    assert_eq!(manifest["backend"], backend_name(backend));
    let instances = rows_of(&manifest, "instances");
    assert!(
        instances >= 5 && instances <= 5 + started_during,
        "{instances} instances, {started_during} started during"
    );
    match backend {
        Backend::Sqlite => opened_sqlite_copy_holds(&app, &file, &finished).await,
        Backend::Postgres => archive_holds(&file, &finished),
    }
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

/// A server started on a copy of the backup (with the original's master key, which the backup
/// does not hold) shows every instance that had finished, as it had finished.
async fn opened_sqlite_copy_holds(app: &TestApp, backup: &Path, finished: &[String]) {
    let original = sqlite_folder(&app.database_url);
    let key = std::fs::read(original.join("master.key")).unwrap();
    let backup_bytes = std::fs::read(backup).unwrap();
    assert!(!backup_bytes.windows(key.len()).any(|w| w == key.as_slice()), "the master key is not in the backup");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(backup, dir.path().join("trellis.db")).unwrap();
    std::fs::write(dir.path().join("master.key"), &key).unwrap();
    let url = format!("sqlite://{}", dir.path().join("trellis.db").display());
    let restored = TestApp::spawn_on(url, dir, |_| {}).await;
    for id in finished {
        let instance = restored.instance(id).await;
        assert!(instance.summary.status.is_terminal(), "{id} finished in the copy: {:?}", instance.summary.status);
    }
}

fn sqlite_folder(url: &str) -> PathBuf {
    Path::new(url.trim_start_matches("sqlite://")).parent().unwrap().to_owned()
}

/// The archive's `instances` rows include every finished instance, ended; the key is not in it.
fn archive_holds(archive: &Path, finished: &[String]) {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap()).read_to_string(&mut text).unwrap();
    assert!(!text.contains(TEST_MASTER_KEY), "the master key is not in the backup");
    let mut table = String::new();
    let mut ended = Vec::new();
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        if let Some(name) = line["table"]["name"].as_str() {
            table = name.to_owned();
        } else if table == "instances" && line["row"]["status"] == "succeeded" {
            ended.push(line["row"]["id"].as_str().unwrap().to_owned());
        }
    }
    for id in finished {
        assert!(ended.contains(id), "{id} is in the archive, succeeded");
    }
}

on_both!(a_backup_killed_at_any_moment_leaves_the_previous_one_whole);

/// Kills `backup create --to FILE` after a few waits (before, during, after its writing): FILE
/// is always a whole backup, the old one or the new, and only temporary names hold partial data,
/// which the next backup to FILE removes.
async fn a_backup_killed_at_any_moment_leaves_the_previous_one_whole(backend: Backend) {
    let (url, _db) = crate::common::fresh_database(backend).await;
    let out = tempfile::tempdir().unwrap();
    assert!(trellis(&url, out.path(), &["migrate"]).await.status.success());
    fill_settings(&url).await;
    let file = out.path().join("nightly.backup");
    let create = ["backup", "create", "--to", file.to_str().unwrap()];
    assert!(trellis(&url, out.path(), &create).await.status.success());
    let settings = rows_of(&verify_json(&url, &file).await, "settings");
    assert!(settings >= FILLED_SETTINGS);
    for wait_ms in [0, 20, 60, 120, 250, 500] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_trellis"));
        command.args(create).current_dir(out.path()).env("DATABASE_URL", &url).env("RUST_LOG", "warn");
        let mut child = command.stdout(std::process::Stdio::null()).spawn().unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
        child.kill().await.unwrap();
        let manifest = verify_json(&url, &file).await;
        assert_eq!(rows_of(&manifest, "settings"), settings, "killed after {wait_ms} ms");
        let others: Vec<String> = listing(out.path()).into_iter().filter(|n| n != "nightly.backup").collect();
        assert!(others.iter().all(|n| n.starts_with(".nightly.backup.partial-")), "{others:?}");
    }
    assert!(trellis(&url, out.path(), &create).await.status.success());
    assert_eq!(listing(out.path()), ["nightly.backup"], "the next backup removes what killed ones left");
}

pub const FILLED_SETTINGS: u64 = 20_000;

/// Enough rows (a few MB) that a backup takes a while to write.
pub async fn fill_settings(url: &str) {
    use sqlx::Connection;
    if url.starts_with("postgres") {
        let sql = format!(
            "INSERT INTO settings (key, value) SELECT 'filler-' || i, lpad(i::text, 200, '0') \
             FROM generate_series(1, {FILLED_SETTINGS}) AS i"
        );
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query(&sql).execute(&mut conn).await.unwrap();
    } else {
        let sql = format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {FILLED_SETTINGS}) \
             INSERT INTO settings (key, value) SELECT 'filler-' || i, printf('%0200d', i) FROM n"
        );
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query(&sql).execute(&mut conn).await.unwrap();
    }
}
