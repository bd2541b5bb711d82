//! `trellis transfer`: everything in a SQLite database carried into an empty Postgres one (and
//! back), read back and compared: instances with their nodes and outputs, a run waiting at a
//! gate that goes on in the new database, the secrets' key check, users; a transfer killed
//! part way goes on when run again; what cannot be done is refused with nothing written.

use crate::backup::{stderr, trellis};
use crate::common::{chain, fresh_database, fresh_postgres_database, gated, node, Backend, TestApp, TEST_MASTER_KEY};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use trellis_model::api::{Cluster, InstanceDetail};
use trellis_model::{InstanceStatus, NodeStatus};

/// A server on a new database of `backend` whose secrets are sealed with the tests' shared key.
async fn source(backend: Backend) -> TestApp {
    let (url, dir) = fresh_database(backend).await;
    std::fs::write(dir.path().join("master.key"), TEST_MASTER_KEY).unwrap();
    TestApp::spawn_on(url, dir, |_| {}).await
}

/// Workflows, a secret, a cron trigger, runs that succeeded and failed, and one waiting.
async fn fill(app: &TestApp) -> (Vec<String>, String) {
    let created = app.post("/api/v1/secrets").json(&json!({"name": "API_TOKEN", "value": "s3cret-value"})).send().await;
    assert_eq!(created.unwrap().status(), 201);
    let flow = app.publish(chain()).await;
    let failing = app
        .publish(json!({"nodes": [{"id": "boom", "type": "fail", "config": {"message": "no {{ input.n }}"}}]}))
        .await;
    let gate = app.publish(gated()).await;
    let cron = json!({"kind": "cron", "expression": "0 0 1 1 *"});
    assert_eq!(app.post(&format!("/api/v1/workflows/{flow}/triggers")).json(&cron).send().await.unwrap().status(), 201);
    let mut finished = Vec::new();
    for n in 0..5 {
        let id = app.start(&flow, json!({"input": {"n": n}})).await;
        app.wait_finished(&id).await;
        finished.push(id);
        let id = app.start(&failing, json!({"input": {"n": n}})).await;
        app.wait_finished(&id).await;
        finished.push(id);
    }
    // Started without input: its input is JSON `null` in a column that cannot be NULL.
    let bare = app.start(&flow, json!({})).await;
    app.wait_finished(&bare).await;
    finished.push(bare);
    let waiting = app.start(&gate, json!({"input": {"n": 1}})).await;
    app.wait_for(&waiting, |i| node(i, "gate").status == NodeStatus::Waiting).await;
    (finished, waiting)
}

/// What must be the same on both sides (times differ in precision across databases).
fn essence(detail: &InstanceDetail) -> Value {
    let nodes: Vec<Value> =
        detail.nodes.iter().map(|n| json!([n.id, n.status, n.attempts, n.output, n.error])).collect();
    json!({"status": detail.summary.status, "input": detail.input, "output": detail.output, "nodes": nodes})
}

async fn transfer(from: &str, to: &str, cwd: &Path) -> std::process::Output {
    trellis(from, cwd, &["transfer", "--from", from, "--to", to, "-o", "json"]).await
}

async fn carried_and_checked(from: Backend) {
    let original = source(from).await;
    let (finished, waiting) = fill(&original).await;
    let (target, target_dir) = match from {
        Backend::Sqlite => (fresh_postgres_database().await, tempfile::tempdir().unwrap()),
        Backend::Postgres => fresh_database(Backend::Sqlite).await,
    };
    std::fs::write(target_dir.path().join("master.key"), TEST_MASTER_KEY).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let done = transfer(&original.database_url, &target, cwd.path()).await;
    assert!(done.status.success(), "transfer: {}", stderr(&done));
    let report: Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(report["held"], true, "the source's server was running: {report}");
    let rows_of =
        |t: &str| report["tables"].as_array().unwrap().iter().find(|x| x["name"] == t).unwrap()["rows"].clone();
    assert_eq!(rows_of("instances"), json!(finished.len() + 1), "{report}");

    // A server starts on the copy: its master key check opens (the secrets came sealed).
    let copy = TestApp::spawn_on(target, target_dir, |s| s.lease_ms = 1_000).await;
    let cluster: Cluster = copy.get("/api/v1/cluster").send().await.unwrap().json().await.unwrap();
    assert!(cluster.held && cluster.processes.len() == 1, "{cluster:?}");
    for id in &finished {
        assert_eq!(essence(&copy.instance(id).await), essence(&original.instance(id).await), "instance {id}");
    }
    let secrets: Value = copy.get("/api/v1/secrets").send().await.unwrap().json().await.unwrap();
    assert_eq!(secrets["items"][0]["name"], "API_TOKEN");
    let triggers: Value = copy.get("/api/v1/triggers").send().await.unwrap().json().await.unwrap();
    assert_eq!(triggers["items"].as_array().unwrap().len(), 1);
    copy.login("admin", crate::common::ADMIN_PASSWORD).await;

    assert_eq!(copy.post("/api/v1/cluster/resume").send().await.unwrap().status(), 200);
    let signaled = copy.signal(&waiting, json!({"node": "gate", "payload": {"ok": true}})).await;
    assert_eq!(signaled.status(), 200, "the waiting run waits in the copy too");
    assert_eq!(copy.wait_finished(&waiting).await.summary.status, InstanceStatus::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_is_carried_into_postgres_whole() {
    carried_and_checked(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_is_carried_into_sqlite_whole() {
    carried_and_checked(Backend::Postgres).await;
}

/// Tables the target's ledger records as carried, or `None` while it has no ledger.
async fn recorded_tables(conn: &mut sqlx::PgConnection) -> Option<i64> {
    sqlx::query_scalar("SELECT count(*) FROM _trellis_transfer WHERE name <> '(source)'").fetch_one(conn).await.ok()
}

/// Starts a transfer and kills it (SIGKILL) once the target's ledger records `more` tables
/// than before it started; false when it finished before that could be seen.
async fn transfer_killed_at(from: &str, to: &str, more: i64) -> bool {
    use sqlx::Connection;
    let mut target = sqlx::PgConnection::connect(to).await.unwrap();
    let before = recorded_tables(&mut target).await.unwrap_or(0);
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["transfer", "--from", from, "--to", to])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            tokio::io::AsyncReadExt::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).await.unwrap();
            assert!(status.success(), "the transfer failed on its own: {stderr}");
            return false;
        }
        if recorded_tables(&mut target).await.is_some_and(|n| n >= before + more) {
            child.kill().await.unwrap();
            return recorded_tables(&mut target).await.is_some();
        }
        assert!(tokio::time::Instant::now() < deadline, "the transfer never carried {more} more tables");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_killed_part_way_goes_on_when_run_again() {
    let (from, _dir) = fresh_database(Backend::Sqlite).await;
    let cwd = tempfile::tempdir().unwrap();
    assert!(trellis(&from, cwd.path(), &["migrate"]).await.status.success());
    crate::backup::fill_settings(&from).await;
    // Killed once as soon as its ledger exists (migrating, or on its first tables) and once
    // after it carried three more, each seen in the target's ledger; a machine fast enough
    // to finish before the kill lands gets a new target (what is tested is the going on,
    // not the timing).
    let mut to = None;
    for _ in 0..5 {
        let target = fresh_postgres_database().await;
        if transfer_killed_at(&from, &target, 0).await && transfer_killed_at(&from, &target, 3).await {
            to = Some(target);
            break;
        }
    }
    let to = to.expect("a transfer was killed part way");
    let done = transfer(&from, &to, cwd.path()).await;
    assert!(done.status.success(), "the same command goes on: {}", stderr(&done));
    let report: Value = serde_json::from_slice(&done.stdout).unwrap();
    let settings =
        report["tables"].as_array().unwrap().iter().find(|t| t["name"] == "settings").unwrap()["rows"].clone();
    assert!(settings.as_u64().unwrap() >= crate::backup::FILLED_SETTINGS, "{report}");
    assert_eq!(report["held"], false, "no server ran on the source");
    assert!(report["resumed_tables"].as_u64().unwrap() >= 3, "it went on from the tables carried: {report}");

    let again = transfer(&from, &to, cwd.path()).await;
    assert!(!again.status.success());
    assert!(stderr(&again).contains("is not empty"), "a finished target is not written again: {}", stderr(&again));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_that_cannot_be_done_is_refused_and_writes_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    let (sqlite, _dir) = fresh_database(Backend::Sqlite).await;
    assert!(trellis(&sqlite, cwd.path(), &["migrate"]).await.status.success());
    let (other_sqlite, _other) = fresh_database(Backend::Sqlite).await;
    let same = transfer(&sqlite, &other_sqlite, cwd.path()).await;
    assert!(stderr(&same).contains("trellis restore"), "{}", stderr(&same));

    let occupied = fresh_postgres_database().await;
    assert!(trellis(&occupied, cwd.path(), &["migrate"]).await.status.success());
    let refused = transfer(&sqlite, &occupied, cwd.path()).await;
    assert!(stderr(&refused).contains("is not empty"), "{}", stderr(&refused));

    let nothing = format!("sqlite://{}", cwd.path().join("absent.db").display());
    let missing = transfer(&nothing, &fresh_postgres_database().await, cwd.path()).await;
    assert!(stderr(&missing).contains("no SQLite database"), "{}", stderr(&missing));
    assert!(!cwd.path().join("absent.db").exists());
}
