//! The upgrade matrix: every database an earlier release wrote (`tests/fixtures/upgrade/<commit>/`,
//! made by `make.sh` there; each release adds its own), opened by this release on both
//! databases. Its migrations apply; every run is as it was; a run waiting at its gate goes on
//! when signaled; a run held by a timer fires it exactly once; a secret sealed by the old
//! release opens (an `http` node sends it to a receiver here); the old admin signs in.

use crate::common::{fresh_postgres_database, node, Backend, TestApp, TEST_MASTER_KEY};
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use trellis_model::InstanceStatus;

#[derive(Deserialize)]
struct Facts {
    commit: String,
    succeeded: Vec<String>,
    failed: Vec<String>,
    waiting: String,
    timer: String,
    caller: String,
    workflows: usize,
    secret: String,
}

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

fn facts(dir: &Path, backend: Backend) -> Facts {
    let name = match backend {
        Backend::Sqlite => "facts.json",
        Backend::Postgres => "facts-postgres.json",
    };
    serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
}

/// The fixture's database, copied where this release may change it.
async fn database(dir: &Path, backend: Backend) -> (String, tempfile::TempDir) {
    let folder = tempfile::tempdir().unwrap();
    let url = match backend {
        Backend::Sqlite => {
            std::fs::copy(dir.join("trellis.sqlite"), folder.path().join("trellis.db")).unwrap();
            std::fs::write(folder.path().join("master.key"), TEST_MASTER_KEY).unwrap();
            format!("sqlite://{}", folder.path().join("trellis.db").display())
        }
        Backend::Postgres => {
            let url = fresh_postgres_database().await;
            let loaded = std::process::Command::new("psql")
                .args([url.as_str(), "-q", "-v", "ON_ERROR_STOP=1", "-f"])
                .arg(dir.join("trellis.postgres.sql"))
                .output()
                .expect("psql (the Postgres client) loads the fixture's dump");
            assert!(loaded.status.success(), "{}", String::from_utf8_lossy(&loaded.stderr));
            url
        }
    };
    (url, folder)
}

/// A receiver on loopback keeping each request's `authorization` header.
async fn receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/echo",
        axum::routing::get(move |headers: HeaderMap| {
            let kept = kept.clone();
            async move {
                let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
                kept.lock().unwrap().push(auth.to_owned());
                axum::Json(json!({"ok": true}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/echo"), seen)
}

async fn every_fixture_opens(backend: Backend) {
    let all = fixtures();
    assert!(!all.is_empty(), "at least one earlier release's fixture is kept");
    for dir in all {
        let facts = facts(&dir, backend);
        let (url, folder) = database(&dir, backend).await;
        let app = TestApp::spawn_on(url, folder, |_| {}).await;
        let release = &facts.commit;
        let schema = app.store().await.schema_version().await.unwrap();
        assert_eq!(schema, trellis::store::newest_migration(backend_name(backend)), "{release}: migrated");
        let workflows: serde_json::Value = app.get("/api/v1/workflows").send().await.unwrap().json().await.unwrap();
        assert_eq!(workflows["items"].as_array().unwrap().len(), facts.workflows, "{release}");
        for id in &facts.succeeded {
            let run = app.instance(id).await;
            assert_eq!(run.summary.status, InstanceStatus::Succeeded, "{release}: {id}");
            assert!(node(&run, "a").output.is_some(), "{release}: outputs kept");
        }
        for id in &facts.failed {
            assert_eq!(app.instance(id).await.summary.status, InstanceStatus::Failed, "{release}: {id}");
        }
        let signaled = app.signal(&facts.waiting, json!({"node": "gate", "payload": {"ok": true}})).await;
        assert_eq!(signaled.status(), 200, "{release}: the waiting run still waits");
        assert_eq!(app.wait_finished(&facts.waiting).await.summary.status, InstanceStatus::Succeeded);
        let timed = app.wait_finished(&facts.timer).await;
        assert_eq!(timed.summary.status, InstanceStatus::Succeeded, "{release}: the timer fired");
        assert_eq!(node(&timed, "wait").attempts, 1, "{release}: once");
        assert_eq!(node(&timed, "after").attempts, 1, "{release}: once");

        let (echo, seen) = receiver().await;
        let called = app.start(&facts.caller, json!({"input": {"url": echo}})).await;
        assert_eq!(app.wait_finished(&called).await.summary.status, InstanceStatus::Succeeded, "{release}");
        assert_eq!(*seen.lock().unwrap(), [format!("Bearer {}", facts.secret)], "{release}: the secret opened");
    }
}

/// An earlier release's Postgres backup, restored by this release: held, every run as it was,
/// and once resumed the waiting run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_earlier_release_s_postgres_backup_restores() {
    for dir in fixtures().into_iter().filter(|d| d.join("backup.postgres.jsonl.gz").exists()) {
        let facts = facts(&dir, Backend::Postgres);
        let url = fresh_postgres_database().await;
        let file = dir.join("backup.postgres.jsonl.gz");
        let cwd = tempfile::tempdir().unwrap();
        let restored = crate::backup::trellis(&url, cwd.path(), &["restore", file.to_str().unwrap()]).await;
        assert!(restored.status.success(), "{}: {}", facts.commit, crate::backup::stderr(&restored));
        let app = TestApp::spawn_on(url, cwd, |s| s.lease_ms = 1_000).await;
        let cluster: serde_json::Value = app.get("/api/v1/cluster").send().await.unwrap().json().await.unwrap();
        assert_eq!(cluster["held"], true, "{}", facts.commit);
        for id in &facts.succeeded {
            assert_eq!(app.instance(id).await.summary.status, InstanceStatus::Succeeded, "{}: {id}", facts.commit);
        }
        assert_eq!(app.post("/api/v1/cluster/resume").send().await.unwrap().status(), 200);
        let signaled = app.signal(&facts.waiting, json!({"node": "gate", "payload": {}})).await;
        assert_eq!(signaled.status(), 200, "{}", facts.commit);
        assert_eq!(app.wait_finished(&facts.waiting).await.summary.status, InstanceStatus::Succeeded);
    }
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_earlier_release_s_sqlite_database_opens_whole() {
    every_fixture_opens(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_earlier_release_s_postgres_database_opens_whole() {
    every_fixture_opens(Backend::Postgres).await;
}
