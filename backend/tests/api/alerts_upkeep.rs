//! Alerts' upkeep: the slow-rule watcher reads only runs not yet alerted on, old deliveries are
//! swept by retention, an end with no rule consumes its item, and a stopping server waits for
//! its posts then gives back the leases of what it could not send.

use crate::alerts::{create, failing, log, receiver};
use crate::common::{db_config, on_both, serve_config, Backend, TestApp};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use chrono::{Duration as Days, Utc};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trellis::alerts::watch::Watcher;
use trellis::jobs::retention::Sweeper;
use trellis::store::{AlertAttemptRow, DynStore, NewDelivery};
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

/// Rounds until one finds no run to alert on. The watcher writes through the server's own store,
/// as the server's watcher does (on SQLite a second handle would be a second writer).
async fn rounds(watcher: &Watcher) -> Vec<usize> {
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
    let store = app.server_store();
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
        event: trellis_model::AlertEvent::Slow,
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

async fn count(app: &TestApp, sql: &str) -> i64 {
    use sqlx::Connection;
    if app.database_url.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(&app.database_url).await.unwrap();
        sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap()
    } else {
        let mut conn = sqlx::SqliteConnection::connect(&app.database_url).await.unwrap();
        sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap()
    }
}

/// Records a delivery of `rule` made `days` ago: sent (delivered or not) with its attempt, or pending.
async fn delivery(store: &DynStore, rule: &str, days: i64, sent: Option<bool>, group: Option<&str>) {
    let now = Utc::now() - Days::days(days);
    let id = Uuid::now_v7();
    let attempt = AlertAttemptRow { delivery_id: id, attempt: 1, at: now, status_code: Some(200), error: None };
    let new = NewDelivery {
        id,
        rule_id: rule.parse().unwrap(),
        event: trellis_model::AlertEvent::Failed,
        source_key: id.to_string(),
        group_key: group.map(str::to_owned),
        instance_id: None,
        body: "{}".into(),
        now,
        dedupe_since: None,
        sent: sent.map(|delivered| (delivered, attempt)),
    };
    assert!(store.record_delivery(&new).await.unwrap());
}

async fn statuses(app: &TestApp, rule: &str) -> Vec<(String, i64)> {
    let now = Utc::now();
    log(app, rule).await.into_iter().map(|d| (d.status.as_str().to_owned(), (now - d.created_at).num_days())).collect()
}

/// Finished deliveries past 30 days (or the default policy's `audit_days`) go, their attempts
/// with them; pending ones and a group's leader within its rule's dedupe window stay.
async fn old_finished_deliveries_are_swept_with_their_attempts(backend: Backend) {
    let app = quiet_app(backend).await;
    // This server's sender is quiet: the pending delivery stays pending.
    let url = "http://127.0.0.1:9/hook";
    let plain = create(&app, json!({"name": "p", "when": "failed", "url": url})).await.rule.id;
    let window = create(&app, json!({"name": "w", "when": "failed", "url": url, "dedupe_ms": 60 * 86_400_000_i64}))
        .await
        .rule
        .id;
    let store = app.server_store();
    for (days, sent) in [(40, Some(true)), (40, Some(false)), (40, None), (20, Some(true)), (1, Some(true))] {
        delivery(&store, &plain, days, sent, None).await;
    }
    delivery(&store, &window, 40, Some(true), Some("g")).await;
    delivery(&store, &window, 70, Some(true), Some("g")).await;
    let attempts_before = count(&app, "SELECT COUNT(*) FROM alert_attempts").await;

    let sweeper = Sweeper::new(store.clone(), Duration::from_secs(3600));
    let (_stop, running) = tokio::sync::watch::channel(false);
    assert_eq!(sweeper.sweep_alerts(&running).await.unwrap(), 3);
    assert_eq!(
        statuses(&app, &plain).await,
        [("delivered".into(), 1), ("delivered".into(), 20), ("pending".into(), 40)]
    );
    assert_eq!(statuses(&app, &window).await, [("delivered".into(), 40)], "the window's leader stays");
    assert_eq!(count(&app, "SELECT COUNT(*) FROM alert_attempts").await, attempts_before - 3);

    // With `audit_days`, the log follows the audit log's age instead.
    let set = app.put("/api/v1/retention").json(&json!({"audit_days": 10})).send().await.unwrap();
    assert_eq!(set.status(), 200);
    assert_eq!(sweeper.sweep_alerts(&running).await.unwrap(), 1);
    assert_eq!(statuses(&app, &plain).await, [("delivered".into(), 1), ("pending".into(), 40)]);
    assert_eq!(sweeper.sweep_alerts(&running).await.unwrap(), 0);
}

/// Rules exist, none for this workflow: its failure records nothing and its alert item is
/// consumed (no work is left due).
async fn an_end_no_rule_matches_consumes_its_alert_item(backend: Backend) {
    let app = quiet_app(backend).await;
    let (bad, other) =
        (app.publish(failing()).await, app.publish(json!({"nodes": [{"id": "ok", "type": "noop"}]})).await);
    let rule =
        create(&app, json!({"name": "x", "when": "failed", "url": "http://127.0.0.1:9/h", "workflow": other})).await;
    let id = app.start(&bad, json!({})).await;
    app.wait_finished(&id).await;
    let store = app.store().await;
    for _ in 0..100 {
        if store.next_due().await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(store.next_due().await.unwrap().is_empty(), "the alert item was consumed");
    assert!(log(&app, &rule.rule.id).await.is_empty());
}

/// A receiver that counts posts and answers after `delay`, or only once `open`.
async fn slow_receiver(delay: Duration, open: Arc<AtomicBool>) -> (String, Arc<AtomicUsize>) {
    let got = Arc::new(AtomicUsize::new(0));
    let state = (got.clone(), open, delay);
    type Gate = (Arc<AtomicUsize>, Arc<AtomicBool>, Duration);
    async fn answer(State((got, open, delay)): State<Gate>) -> StatusCode {
        got.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(delay).await;
        while !open.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        StatusCode::OK
    }
    let app = axum::Router::new().route("/hook", post(answer)).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), got)
}

async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}");
}

/// Two posts in flight at shutdown: the quick one is awaited and logged; the hung one is cut
/// off at the drain deadline and its lease given back, so another process sends it at once
/// (its lease would otherwise last the attempt timeout plus 30 s).
async fn a_stopping_server_awaits_its_posts_then_gives_back_the_leases(backend: Backend) {
    let app = quiet_app(backend).await;
    let (quick, quick_got) = slow_receiver(Duration::from_millis(300), Arc::new(AtomicBool::new(true))).await;
    let open = Arc::new(AtomicBool::new(false));
    let (hung, hung_got) = slow_receiver(Duration::ZERO, open.clone()).await;
    let quick_rule = create(&app, json!({"name": "q", "when": "failed", "url": quick})).await.rule.id;
    let hung_rule = create(&app, json!({"name": "h", "when": "failed", "url": hung})).await.rule.id;

    let mut serve = serve_config();
    (serve.alert_poll_ms, serve.alert_timeout_ms, serve.drain_secs) = (50, 60_000, 1);
    let sender = trellis::server::Server::build(db_config(&app.database_url), serve).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(sender.run(async move { stopped.await.unwrap_or_default() }));
    let bad = app.publish(failing()).await;
    let id = app.start(&bad, json!({})).await;
    app.wait_finished(&id).await;
    until("both posts arrive", || quick_got.load(Ordering::SeqCst) == 1 && hung_got.load(Ordering::SeqCst) == 1).await;

    let asked = Instant::now();
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    assert!(asked.elapsed() < Duration::from_secs(5), "stopped within the drain: {:?}", asked.elapsed());
    let quick_log = log(&app, &quick_rule).await;
    assert_eq!((quick_log[0].status.as_str(), quick_log[0].attempts.len()), ("delivered", 1), "awaited and logged");
    let hung_log = log(&app, &hung_rule).await;
    assert_eq!((hung_log[0].status.as_str(), hung_log[0].attempts.len()), ("pending", 0));
    let leased =
        count(&app, "SELECT COUNT(*) FROM alert_deliveries WHERE lease_owner IS NOT NULL OR lease_until IS NOT NULL");
    assert_eq!(leased.await, 0, "the lease was given back");

    open.store(true, Ordering::SeqCst);
    let _peer =
        TestApp::spawn_on(app.database_url.clone(), tempfile::tempdir().unwrap(), |s| s.alert_poll_ms = 50).await;
    until("another process sends it at once", || hung_got.load(Ordering::SeqCst) == 2).await;
    for _ in 0..100 {
        if log(&app, &hung_rule).await[0].status == trellis_model::AlertDeliveryStatus::Delivered {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the released delivery was never delivered");
}

on_both!(
    every_slow_run_is_alerted_within_a_few_rounds_then_left_alone,
    old_finished_deliveries_are_swept_with_their_attempts,
    an_end_no_rule_matches_consumes_its_alert_item,
    a_stopping_server_awaits_its_posts_then_gives_back_the_leases,
);
