//! Alerts' upkeep: the slow-rule watcher reads only runs not yet alerted on.

use crate::alerts::{create, log, receiver};
use crate::common::{Backend, TestApp};
use chrono::Utc;
use serde_json::json;
use std::time::Duration;
use trellis::alerts::watch::Watcher;
use trellis::store::NewDelivery;
use uuid::Uuid;

/// A server whose own watcher and sender go quiet after their first round (an hour apart), so
/// the test drives the watcher itself.
async fn quiet_app(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |serve| serve.alert_poll_ms = 3_600_000).await
}

fn stuck() -> serde_json::Value {
    json!({"nodes": [{"id": "wait", "type": "delay", "config": {"duration_ms": 60_000}, "stuck_after_ms": 1}]})
}

/// Runs `n` instances of `wf` until each shows as slow.
async fn slow_runs(app: &TestApp, wf: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(app.start(wf, json!({})).await);
    }
    for _ in 0..200 {
        let page: trellis_model::api::InstancePage =
            app.get(&format!("/api/v1/instances?slow=true&workflow={wf}")).send().await.unwrap().json().await.unwrap();
        if page.items.len() == n {
            return ids;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the runs never all showed as slow");
}

/// Rounds until one finds no run to alert on. The watcher writes through the test's own store:
/// on SQLite that is a second writer beside the server's (one per process in production), so
/// it first lets the server's audit writer finish what the requests before queued.
async fn rounds(watcher: &Watcher) -> Vec<usize> {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut judged = Vec::new();
    for _ in 0..6 {
        judged.push(watcher.round().await.unwrap());
        if judged.last() == Some(&0) {
            break;
        }
    }
    judged
}

async fn instances_in_log(app: &TestApp, rule: &str) -> Vec<String> {
    let mut ids: Vec<String> = log(app, rule).await.into_iter().filter_map(|d| d.instance_id).collect();
    ids.sort();
    ids
}

/// 12 slow runs, 5 looked at per round: each is alerted on within three rounds, and the
/// fourth reads none (so it writes nothing), whether every rule is for one workflow or not.
async fn every_slow_run_is_alerted_within_a_few_rounds_then_left_alone(backend: Backend) {
    let app = quiet_app(backend).await;
    let (url, _inbox) = receiver(vec![]).await;
    let (wf, calm) = (app.publish(stuck()).await, app.publish(json!({"nodes": [{"id": "ok", "type": "noop"}]})).await);
    let scoped = create(&app, json!({"name": "s", "when": "slow", "url": url, "workflow": wf})).await;
    create(&app, json!({"name": "o", "when": "slow", "url": url, "workflow": calm})).await;
    let mut ids = slow_runs(&app, &wf, 12).await;
    ids.sort();
    let store = app.store().await;
    let watcher = Watcher::new(store.clone(), None, Duration::from_secs(3600)).slow_per_round(5);
    assert_eq!(rounds(&watcher).await, [5, 5, 2, 0]);
    assert_eq!(instances_in_log(&app, &scoped.rule.id).await, ids);

    // A rule for every workflow: the same again for it alone.
    let all = create(&app, json!({"name": "a", "when": "slow", "url": url})).await;
    assert_eq!(rounds(&watcher).await, [5, 5, 2, 0]);
    assert_eq!(instances_in_log(&app, &all.rule.id).await, ids);
    assert_eq!(log(&app, &scoped.rule.id).await.len(), 12, "nothing recorded twice");

    // Recording a known key answers without waiting for the rule's lock another holds.
    let rule: Uuid = scoped.rule.id.parse().unwrap();
    let known = NewDelivery {
        id: Uuid::now_v7(),
        rule_id: rule,
        event: "slow".into(),
        source_key: format!("slow:{}:1", ids[0]),
        group_key: None,
        instance_id: ids[0].parse().ok(),
        body: "{}".into(),
        now: Utc::now(),
        dedupe_since: None,
        sent: None,
    };
    let _lock = hold_rule_lock(&app, rule).await;
    let answered = tokio::time::timeout(Duration::from_secs(3), store.record_delivery(&known)).await;
    assert!(!answered.expect("answered while the rule is locked").unwrap());
}

/// Another connection holding the rule's row lock (Postgres), or the write lock (SQLite).
async fn hold_rule_lock(app: &TestApp, rule: Uuid) -> Box<dyn std::any::Any + Send> {
    use sqlx::Connection;
    if app.database_url.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(&app.database_url).await.unwrap();
        sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
        sqlx::query("SELECT id FROM alert_rules WHERE id = $1 FOR UPDATE").bind(rule).execute(&mut conn).await.unwrap();
        Box::new(conn)
    } else {
        let mut conn = sqlx::SqliteConnection::connect(&app.database_url).await.unwrap();
        sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await.unwrap();
        Box::new(conn)
    }
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(Backend::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(Backend::Postgres).await
            }
        }
    )*};
}

on_both!(every_slow_run_is_alerted_within_a_few_rounds_then_left_alone,);
