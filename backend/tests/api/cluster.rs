//! The cluster: every process on one database lists itself with its release and heartbeat;
//! scheduled backups are taken once per period however many processes share the database, the
//! folder keeps the newest few, and a failing one raises `backup_failed` alerts.

use crate::alerts::receiver;
use crate::common::{on_both, Backend, TestApp};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use trellis::config::BackupArgs;
use trellis_model::api::Cluster;

async fn cluster(app: &TestApp) -> Cluster {
    app.get("/api/v1/cluster").send().await.unwrap().json().await.unwrap()
}

fn every_second(dir: PathBuf, keep: u32) -> BackupArgs {
    BackupArgs { dir: Some(dir), every: Duration::from_secs(1), keep }
}

on_both!(every_process_lists_itself_and_a_stopped_one_leaves);

async fn every_process_lists_itself_and_a_stopped_one_leaves(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let seen = cluster(&app).await;
    assert!(!seen.held);
    assert!(seen.schema_version >= 29, "{seen:?}");
    assert_eq!(seen.processes.len(), 1);
    let me = &seen.processes[0];
    assert!(me.this_process && me.alive && !me.draining);
    assert_eq!(me.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(me.schema_known, seen.schema_version);
    assert_eq!(me.listen, app.addr.to_string());
    assert_eq!(me.pid, i64::from(std::process::id()));

    // A second process joins the list, and leaves it when it stops.
    let peer =
        trellis::server::Server::build(crate::common::db_config(&app.database_url), crate::common::serve_config())
            .await
            .unwrap();
    let peer_addr = peer.addr.to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(peer.run(async move {
        let _ = stopped.await;
    }));
    let both = cluster(&app).await;
    assert_eq!(both.processes.len(), 2, "{:?}", both.processes);
    assert!(both.processes.iter().any(|p| p.listen == peer_addr && !p.this_process && p.alive));
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    let after = cluster(&app).await;
    assert_eq!(after.processes.len(), 1, "a stopped process leaves: {:?}", after.processes);
    assert!(after.processes[0].this_process);
}

on_both!(scheduled_backups_are_taken_once_per_period_and_the_newest_kept);

async fn scheduled_backups_are_taken_once_per_period_and_the_newest_kept(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().to_owned();
    let app = TestApp::spawn_with(backend, |s| s.backups = every_second(folder.clone(), 2)).await;
    // On Postgres a second process with the same schedule competes for every period.
    let _peer = match backend {
        Backend::Postgres => Some(
            TestApp::spawn_on(app.database_url.clone(), tempfile::tempdir().unwrap(), |s| {
                s.backups = every_second(folder.clone(), 2)
            })
            .await,
        ),
        Backend::Sqlite => None,
    };
    let mut seen = cluster(&app).await;
    for _ in 0..150 {
        if seen.backups.iter().filter(|b| b.outcome == "succeeded").count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = cluster(&app).await;
    }
    let schedule = seen.backup_schedule.as_ref().expect("the schedule is shown");
    assert_eq!((schedule.every_secs, schedule.keep), (1, 2));
    let succeeded: Vec<_> = seen.backups.iter().filter(|b| b.outcome == "succeeded").collect();
    assert!(succeeded.len() >= 3, "{:?}", seen.backups);
    assert!(succeeded.iter().all(|b| b.bytes.unwrap_or(0) > 0 && b.file.is_some() && b.finished_at.is_some()));
    let mut starts: Vec<_> = seen.backups.iter().map(|b| b.started_at.timestamp()).collect();
    starts.dedup();
    assert_eq!(starts.len(), seen.backups.len(), "one backup per period: {:?}", seen.backups);
    let kept: Vec<String> = crate::backup::listing(dir.path()).into_iter().filter(|n| !n.starts_with('.')).collect();
    assert!(kept.len() <= 3, "the folder keeps the newest 2 (a third may be written now): {kept:?}");
    let newest = PathBuf::from(succeeded[0].file.clone().unwrap());
    let verified =
        crate::backup::trellis(&app.database_url, dir.path(), &["backup", "verify", newest.to_str().unwrap()]).await;
    assert!(verified.status.success(), "{}", crate::backup::stderr(&verified));
}

on_both!(a_failing_scheduled_backup_raises_backup_failed_alerts);

async fn a_failing_scheduled_backup_raises_backup_failed_alerts(backend: Backend) {
    let blocker = tempfile::tempdir().unwrap();
    // A file where the folder should be: every backup into it fails.
    let not_a_folder = blocker.path().join("backups");
    std::fs::write(&not_a_folder, "a file, not a folder").unwrap();
    let app = TestApp::spawn_with(backend, |s| {
        s.backups = every_second(not_a_folder.clone(), 3);
        s.alert_poll_ms = 50;
    })
    .await;
    let (url, inbox) = receiver(vec![]).await;
    let rule: Value = app
        .post("/api/v1/alerts")
        .json(&json!({"name": "backups", "when": "backup_failed", "url": url}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let narrowed = app
        .post("/api/v1/alerts")
        .json(&json!({"name": "x", "when": "backup_failed", "url": url, "workflow": uuid::Uuid::now_v7().to_string()}))
        .send()
        .await
        .unwrap();
    crate::common::problem(narrowed, 422).await;
    let rule_id = rule["id"].as_str().unwrap();
    let mut deliveries = Value::Null;
    for _ in 0..100 {
        deliveries =
            app.get(&format!("/api/v1/alerts/{rule_id}/deliveries")).send().await.unwrap().json().await.unwrap();
        if deliveries["items"].as_array().is_some_and(|d| d.iter().any(|d| d["status"] == "delivered")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = &deliveries["items"][0];
    assert_eq!(first["event"], "backup_failed", "{deliveries}");
    let posted = inbox.lock().unwrap().posts.first().map(|(_, body)| body.clone()).expect("the receiver got it");
    let body: Value = serde_json::from_slice(&posted).unwrap();
    assert_eq!(body["event"], "backup_failed");
    assert!(body["text"].as_str().unwrap().contains("failed"), "{body}");
    let seen = cluster(&app).await;
    let failed = seen.backups.iter().find(|b| b.outcome == "failed").expect("the run is recorded failed");
    assert!(failed.error.as_deref().unwrap_or_default().contains("backups"), "{failed:?}");
}

on_both!(a_release_older_than_the_database_allows_claims_nothing_and_says_why);

/// A newer release raised `compatible_from` past what this one knows (as a contracting
/// migration does): the running process holds itself within a heartbeat, and a new one will
/// not start, each saying why.
async fn a_release_older_than_the_database_allows_claims_nothing_and_says_why(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let flow = app.publish(crate::common::chain()).await;
    let beyond = "UPDATE cluster_state SET compatible_from = 100000";
    if matches!(backend, Backend::Postgres) {
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&app.database_url).await.unwrap();
        sqlx::query(beyond).execute(&mut conn).await.unwrap();
    } else {
        let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&app.database_url).await.unwrap();
        sqlx::query(beyond).execute(&mut conn).await.unwrap();
    }
    tokio::time::sleep(trellis::cluster::HEARTBEAT_EVERY + Duration::from_millis(500)).await;
    let seen = cluster(&app).await;
    assert_eq!(seen.compatible_from, 100_000);
    let started = app.start(&flow, json!({})).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(!app.instance(&started).await.summary.status.is_terminal(), "a process too old claims nothing");

    let config = crate::common::db_config(&app.database_url);
    let refused = trellis::server::Server::build(config, crate::common::serve_config()).await;
    let why = refused.err().expect("a release too old does not start").to_string();
    assert!(why.contains("needs schema 100000"), "{why}");
}
