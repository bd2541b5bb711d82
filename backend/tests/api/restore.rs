//! `trellis restore`: a backup restored into a new database comes up held — no schedule
//! fires, nothing started runs — until an admin resumes it; then a run in flight at the
//! backup's moment goes on. And every restore that must be refused leaves the target as it was.

use crate::backup::{listing, stderr, trellis};
use crate::common::{chain, fresh_database, gated, node, on_both, problem, Backend, TestApp};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use trellis_model::api::Cluster;
use trellis_model::{InstanceStatus, NodeStatus};

async fn cluster(app: &TestApp) -> Cluster {
    let answer = app.get("/api/v1/cluster").send().await.unwrap();
    assert_eq!(answer.status(), 200);
    answer.json().await.unwrap()
}

async fn count_instances(app: &TestApp, workflow: &str) -> usize {
    let list: Value = app
        .get(&format!("/api/v1/instances?workflow={workflow}&limit=500"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    list["items"].as_array().unwrap().len()
}

/// Backs up `app`'s database into `dir/name` with the real binary.
async fn backup(app: &TestApp, dir: &Path, name: &str) -> std::path::PathBuf {
    let file = dir.join(name);
    let created = trellis(&app.database_url, dir, &["backup", "create", "--to", file.to_str().unwrap()]).await;
    assert!(created.status.success(), "backup: {}", stderr(&created));
    file
}

/// A SQLite database's key file goes where its restored copy lives (Postgres tests share one key).
fn carry_master_key(from_url: &str, to_url: &str) {
    if from_url.starts_with("sqlite") {
        let folder = |url: &str| Path::new(url.trim_start_matches("sqlite://")).parent().unwrap().to_owned();
        std::fs::copy(folder(from_url).join("master.key"), folder(to_url).join("master.key")).unwrap();
    }
}

on_both!(a_restored_database_is_held_until_an_admin_resumes_it);

async fn a_restored_database_is_held_until_an_admin_resumes_it(backend: Backend) {
    let original = TestApp::spawn(backend).await;
    let waiting_flow = original.publish(gated()).await;
    let in_flight = original.start(&waiting_flow, json!({"input": {"n": 1}})).await;
    original.wait_for(&in_flight, |i| node(i, "gate").status == NodeStatus::Waiting).await;
    let ticking = original.publish(chain()).await;
    let cron = json!({"kind": "cron", "expression": "* * * * * *"});
    let created = original.post(&format!("/api/v1/workflows/{ticking}/triggers")).json(&cron).send().await.unwrap();
    assert_eq!(created.status(), 201);
    // Started without input: JSON `null` in a column that cannot be NULL comes back as such.
    let bare = original.start(&ticking, json!({})).await;
    original.wait_finished(&bare).await;
    let out = tempfile::tempdir().unwrap();
    let file = backup(&original, out.path(), "before.backup").await;

    let (target, target_dir) = fresh_database(backend).await;
    let restored = trellis(&target, out.path(), &["restore", file.to_str().unwrap()]).await;
    assert!(restored.status.success(), "restore: {}", stderr(&restored));
    let said = String::from_utf8_lossy(&restored.stdout);
    assert!(said.contains("HELD") && said.contains("trellis cluster resume"), "{said}");
    carry_master_key(&original.database_url, &target);
    let copy = TestApp::spawn_on(target, target_dir, |serve| serve.lease_ms = 1_000).await;

    assert_eq!(copy.instance(&bare).await.input, serde_json::Value::Null);
    let held = cluster(&copy).await;
    assert!(held.held, "{held:?}");
    assert!(held.held_reason.as_deref().unwrap_or_default().contains("before.backup"), "{held:?}");
    assert_eq!(held.processes.len(), 1, "only the copy's own process, not the original's: {:?}", held.processes);
    assert!(held.processes[0].this_process && held.processes[0].alive);
    let operator = copy.token_for("operator").await;
    let refused = copy.client.get(copy.url("/api/v1/cluster")).bearer_auth(&operator).send().await.unwrap();
    problem(refused, 403).await;

    // Held: the schedule the original fires every second fires nothing here, and a start waits.
    let ticks_at_restore = count_instances(&copy, &ticking).await;
    let started = copy.start(&ticking, json!({})).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(count_instances(&copy, &ticking).await, ticks_at_restore + 1, "no schedule fired while held");
    assert!(!copy.instance(&started).await.summary.status.is_terminal(), "nothing ran while held");

    let resumed: Cluster = copy.post("/api/v1/cluster/resume").send().await.unwrap().json().await.unwrap();
    assert!(!resumed.held && resumed.resumed_by.as_deref() == Some("admin"), "{resumed:?}");
    copy.wait_finished(&started).await;
    let signaled = copy.signal(&in_flight, json!({"node": "gate", "payload": {"ok": true}})).await;
    assert_eq!(signaled.status(), 200, "the run in flight at the backup waits at its gate in the copy");
    assert_eq!(copy.wait_finished(&in_flight).await.summary.status, InstanceStatus::Succeeded);
    for _ in 0..100 {
        if count_instances(&copy, &ticking).await > ticks_at_restore + 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the schedule fires again once resumed");
}

on_both!(a_restore_that_cannot_be_done_is_refused_and_writes_nothing);

async fn a_restore_that_cannot_be_done_is_refused_and_writes_nothing(backend: Backend) {
    let running = TestApp::spawn(backend).await;
    running.publish(chain()).await;
    let out = tempfile::tempdir().unwrap();
    let file = backup(&running, out.path(), "good.backup").await;
    let restore = |url: String, args: Vec<String>| {
        let cwd = out.path().to_owned();
        async move { trellis(&url, &cwd, &args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };
    let args = |extra: &[&str]| {
        let mut all = vec!["restore".to_owned(), file.display().to_string()];
        all.extend(extra.iter().map(|s| s.to_string()));
        all
    };

    let served = restore(running.database_url.clone(), args(&["--replace"])).await;
    assert!(!served.status.success());
    assert!(stderr(&served).contains("a server is running"), "{}", stderr(&served));
    assert_eq!(count_workflows(&running).await, 1, "the running database is untouched");

    let (stopped, _dir) = fresh_database(backend).await;
    assert!(trellis(&stopped, out.path(), &["migrate"]).await.status.success());
    let occupied = restore(stopped.clone(), args(&[])).await;
    assert!(!occupied.status.success());
    let why = stderr(&occupied);
    assert!(why.contains("--replace"), "{why}");

    let not_a_backup = out.path().join("notes.txt");
    std::fs::write(&not_a_backup, "not a backup").unwrap();
    let refused = restore(stopped.clone(), vec!["restore".into(), not_a_backup.display().to_string()]).await;
    assert!(stderr(&refused).contains("is not a Trellis backup"), "{}", stderr(&refused));

    let other_kind = match backend {
        Backend::Sqlite => crate::common::fresh_postgres_database().await,
        Backend::Postgres => format!("sqlite://{}", out.path().join("elsewhere.db").display()),
    };
    let crossed = restore(other_kind, args(&[])).await;
    assert!(stderr(&crossed).contains("restores into"), "{}", stderr(&crossed));
    if matches!(backend, Backend::Postgres) {
        assert!(!out.path().join("elsewhere.db").exists(), "nothing written for a refused restore");
    }

    let replaced = restore(stopped.clone(), args(&["--replace"])).await;
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    if matches!(backend, Backend::Sqlite) {
        let folder = Path::new(stopped.trim_start_matches("sqlite://")).parent().unwrap().to_owned();
        assert!(listing(&folder).iter().any(|n| n.starts_with("trellis.db.replaced-")), "{:?}", listing(&folder));
    }
}

async fn count_workflows(app: &TestApp) -> usize {
    let list: Value = app.get("/api/v1/workflows").send().await.unwrap().json().await.unwrap();
    list["items"].as_array().unwrap().len()
}
