//! Alerts: signed deliveries to a receiver on 127.0.0.1, once per failure, deduplicated per
//! failure group, retried with each attempt logged; the `http` node's address guard; roles.

use crate::common::{on_both, problem, Backend, TestApp};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use trellis::triggers::signature::verify;
use trellis::triggers::spec::Preset;
use trellis_model::api::AlertWhen;
use trellis_model::api::{AlertDelivery, AlertTestResult, CreatedAlertRule, Items};
use trellis_model::AlertDeliveryStatus;

/// What the receiver got, and the statuses it answers with (then 200s).
#[derive(Default)]
pub(crate) struct Inbox {
    pub(crate) posts: Vec<(HeaderMap, Bytes)>,
    answers: Vec<u16>,
}

pub(crate) type Shared = Arc<Mutex<Inbox>>;

async fn receive(State(inbox): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let mut inbox = inbox.lock().unwrap();
    inbox.posts.push((headers, body));
    let code = if inbox.answers.is_empty() { 200 } else { inbox.answers.remove(0) };
    StatusCode::from_u16(code).unwrap()
}

/// A receiver on 127.0.0.1:0 answering `answers` first; its URL and inbox.
pub(crate) async fn receiver(answers: Vec<u16>) -> (String, Shared) {
    let inbox: Shared = Arc::new(Mutex::new(Inbox { posts: Vec::new(), answers }));
    let app = axum::Router::new().route("/hook", post(receive)).with_state(inbox.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), inbox)
}

/// A server that polls and backs off quickly.
pub(crate) async fn app(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |serve| {
        serve.alert_poll_ms = 50;
        serve.alert_backoff_ms = 50;
        serve.alert_timeout_ms = 2_000;
        serve.public_url = Some("https://trellis.example.com".into());
    })
    .await
}

pub(crate) async fn create(app: &TestApp, body: Value) -> CreatedAlertRule {
    let answer = app.post("/api/v1/alerts").json(&body).send().await.unwrap();
    assert_eq!(answer.status(), 201);
    answer.json().await.unwrap()
}

pub(crate) async fn log(app: &TestApp, rule: &str) -> Vec<AlertDelivery> {
    let answer = app.get(&format!("/api/v1/alerts/{rule}/deliveries")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    answer.json::<Items<AlertDelivery>>().await.unwrap().items
}

/// Waits until the inbox holds `n` posts (at most 15 s), then a little more for strays.
pub(crate) async fn posts(inbox: &Shared, n: usize) -> Vec<(HeaderMap, Bytes)> {
    for _ in 0..300 {
        if inbox.lock().unwrap().posts.len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    inbox.lock().unwrap().posts.clone()
}

pub(crate) fn checked_body(secret: &str, (headers, body): &(HeaderMap, Bytes)) -> Value {
    let id = verify(Preset::Standard, headers, body, &[secret], chrono::Utc::now()).expect("a valid signature");
    assert!(id.starts_with("msg_"), "{id}");
    serde_json::from_slice(body).unwrap()
}

pub(crate) fn failing() -> Value {
    json!({"nodes": [{"id": "call", "type": "fail", "config": {"message": "boom"}}]})
}

async fn one_signed_alert_per_failure_and_none_for_successes(backend: Backend) {
    let app = app(backend).await;
    let (url, inbox) = receiver(vec![]).await;
    let rule = create(&app, json!({"name": "ops", "when": "failed", "url": url})).await;
    let bad = app.publish(failing()).await;
    let good = app.publish(json!({"nodes": [{"id": "ok", "type": "noop"}]})).await;
    let mut failed = Vec::new();
    for _ in 0..2 {
        let id = app.start(&bad, json!({})).await;
        app.wait_finished(&id).await;
        failed.push(id);
    }
    let fine = app.start(&good, json!({})).await;
    app.wait_finished(&fine).await;

    let got = posts(&inbox, 2).await;
    assert_eq!(got.len(), 2, "one alert per failure, none for the success");
    let mut named: Vec<String> = Vec::new();
    for post in &got {
        let body = checked_body(&rule.secret, post);
        assert_eq!((&body["event"], &body["workflow"]["id"]), (&json!("failed"), &json!(bad)));
        assert_eq!(body["instance"]["failed_node"], "call");
        let id = body["instance"]["id"].as_str().unwrap().to_owned();
        assert_eq!(body["instance"]["url"], format!("https://trellis.example.com/instances/{id}"));
        assert!(body["text"].as_str().unwrap().contains("failed at node `call`"), "{body}");
        named.push(id);
    }
    named.sort();
    failed.sort();
    assert_eq!(named, failed);
    let logged = log(&app, &rule.rule.id).await;
    assert_eq!(logged.len(), 2);
    assert!(logged.iter().all(|d| d.status == AlertDeliveryStatus::Delivered && d.attempts.len() == 1), "{logged:?}");
    assert_eq!(logged[0].attempts[0].status_code, Some(200));
    // The list never shows the secret.
    let listed: Value = app.get("/api/v1/alerts").send().await.unwrap().json().await.unwrap();
    assert!(!listed.to_string().contains(&rule.secret) && listed["items"][0].get("secret").is_none());
}

async fn failures_of_one_group_within_the_window_are_counted_not_sent(backend: Backend) {
    let app = app(backend).await;
    let (url, inbox) = receiver(vec![]).await;
    let rule = create(&app, json!({"name": "once", "when": "failed", "url": url, "dedupe_ms": 600_000})).await;
    let bad = app.publish(failing()).await;
    for _ in 0..3 {
        let id = app.start(&bad, json!({})).await;
        app.wait_finished(&id).await;
    }
    for _ in 0..100 {
        if log(&app, &rule.rule.id).await.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(posts(&inbox, 1).await.len(), 1, "only the group's first failure is sent");
    let logged = log(&app, &rule.rule.id).await;
    let statuses: Vec<&str> = logged.iter().map(|d| d.status.as_str()).collect();
    assert_eq!(statuses, ["suppressed", "suppressed", "delivered"], "newest first");
    assert_eq!(logged[2].suppressed, 2, "the later ones are counted on the first");
}

async fn a_receiver_answering_500_is_retried_and_each_attempt_logged(backend: Backend) {
    let app = app(backend).await;
    let (url, inbox) = receiver(vec![500]).await;
    let rule = create(&app, json!({"name": "retry", "when": "failed", "url": url})).await;
    let bad = app.publish(failing()).await;
    let id = app.start(&bad, json!({})).await;
    app.wait_finished(&id).await;
    let got = posts(&inbox, 2).await;
    assert_eq!(got.len(), 2, "a 500, then the retry's 200");
    assert_eq!(got[0].0["webhook-id"], got[1].0["webhook-id"], "one message, so receivers can dedupe");
    checked_body(&rule.secret, &got[1]);
    let logged = log(&app, &rule.rule.id).await;
    assert_eq!(logged[0].status, AlertDeliveryStatus::Delivered);
    let codes: Vec<(i32, Option<i32>)> = logged[0].attempts.iter().map(|a| (a.attempt, a.status_code)).collect();
    assert_eq!(codes, [(1, Some(500)), (2, Some(200))]);
    assert!(logged[0].attempts[0].error.as_deref().unwrap().contains("500"));
}

async fn send_test_posts_a_signed_test_and_logs_it(backend: Backend) {
    let app = app(backend).await;
    let (url, inbox) = receiver(vec![]).await;
    let rule = create(&app, json!({"name": "test me", "when": "timed_out", "url": url})).await;
    let answer = app.post(&format!("/api/v1/alerts/{}/test", rule.rule.id)).json(&json!({})).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let result: AlertTestResult = answer.json().await.unwrap();
    assert!(result.delivered && result.attempt.status_code == Some(200), "{result:?}");
    let got = posts(&inbox, 1).await;
    assert_eq!(checked_body(&rule.secret, &got[0])["event"], "test");
    let logged = log(&app, &rule.rule.id).await;
    assert_eq!((logged[0].event.as_str(), logged[0].status.as_str()), ("test", "delivered"));
}

async fn refused_addresses_and_bad_fields_are_422_and_readers_get_403(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for url in ["http://10.1.2.3/hook", "http://169.254.169.254/latest", "ftp://127.0.0.1/x"] {
        let answer = app.post("/api/v1/alerts").json(&json!({"name": "x", "when": "failed", "url": url}));
        let body = problem(answer.send().await.unwrap(), 422).await;
        assert_eq!(body["errors"][0]["path"], "url", "{url}: {body}");
    }
    let no_threshold = json!({"name": "q", "when": "queue_depth", "url": "http://127.0.0.1:9/x"});
    let body = problem(app.post("/api/v1/alerts").json(&no_threshold).send().await.unwrap(), 422).await;
    assert_eq!(body["errors"][0]["path"], "threshold");
    let unknown =
        json!({"name": "w", "when": "failed", "url": "http://127.0.0.1:9/x", "workflow": uuid::Uuid::now_v7()});
    let body = problem(app.post("/api/v1/alerts").json(&unknown).send().await.unwrap(), 422).await;
    assert_eq!(body["errors"][0]["path"], "workflow");
    for role in ["viewer", "operator"] {
        let token = app.token_for(role).await;
        let listed = app.client.get(app.url("/api/v1/alerts")).bearer_auth(&token).send().await.unwrap();
        assert_eq!(listed.status(), 403, "{role}");
        let body = json!({"name": "x", "when": "failed", "url": "http://127.0.0.1:9/x"});
        let created = app.client.post(app.url("/api/v1/alerts")).bearer_auth(&token).json(&body).send().await.unwrap();
        assert_eq!(created.status(), 403, "{role}");
    }
}

/// One claim of deliveries of several rules gives each its own rule's address and secret
/// (the rules are read in one query), oldest due first, and leases them.
async fn a_claim_gives_each_delivery_its_rules_address_and_secret(backend: Backend) {
    use trellis::store::{AlertRuleRow, NewDelivery};
    // No sender run claims before this test does.
    let app = TestApp::spawn_with(backend, |serve| serve.alert_poll_ms = 3_600_000).await;
    let store = app.store().await;
    let now = chrono::Utc::now();
    let mut rules = Vec::new();
    for n in 0..3 {
        let rule = AlertRuleRow {
            id: uuid::Uuid::now_v7(),
            name: format!("r{n}"),
            event: AlertWhen::Failed,
            workflow_id: None,
            url: format!("http://127.0.0.1:9/rule-{n}"),
            secret: format!("whsec_{n}"),
            threshold: None,
            for_ms: None,
            dedupe_ms: None,
            over_since: None,
            created_by: "test".into(),
            created_at: now,
            owner_id: None,
        };
        store.insert_alert_rule(&rule).await.unwrap();
        rules.push(rule);
    }
    let mut expected = Vec::new();
    for (k, n) in [0, 1, 0, 2, 1].into_iter().enumerate() {
        let rule = &rules[n];
        let delivery = NewDelivery {
            id: uuid::Uuid::now_v7(),
            rule_id: rule.id,
            event: AlertWhen::Failed.into(),
            source_key: format!("k{k}"),
            group_key: None,
            instance_id: None,
            body: format!("{{\"k\":{k}}}"),
            now: now + chrono::Duration::milliseconds(k as i64),
            dedupe_since: None,
            sent: None,
        };
        assert!(store.record_delivery(&delivery).await.unwrap());
        expected.push((delivery.id, delivery.body, rule.url.clone(), rule.secret.clone()));
    }
    let later = now + chrono::Duration::seconds(1);
    let due = store.claim_deliveries("me", later, later + chrono::Duration::seconds(60), 10).await.unwrap();
    let got: Vec<_> = due.into_iter().map(|d| (d.id, d.body, d.url, d.secret)).collect();
    assert_eq!(got, expected);
    assert!(store.claim_deliveries("other", later, later, 10).await.unwrap().is_empty(), "leased");
}

/// A rule is its creator's: another editor lists it with only the receiver's host (the URL is
/// a credential) and may neither test nor delete it; its creator and admins may.
async fn another_editors_rule_shows_only_its_host_and_cannot_be_tested_or_deleted(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = app.token_for("editor").await;
    let secret_url = "http://127.0.0.1:9/services/T000/B000/XXXXSECRETXXXX";
    let body = json!({"name": "pager", "when": "failed", "url": secret_url});
    let created = app.client.post(app.url("/api/v1/alerts")).bearer_auth(&owner).json(&body).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let rule: CreatedAlertRule = created.json().await.unwrap();
    assert!(rule.rule.can_manage && rule.rule.url == secret_url, "{:?}", rule.rule);

    let user = json!({"username": "other-editor", "password": "password-123", "role": "editor"});
    assert_eq!(app.post("/api/v1/users").json(&user).send().await.unwrap().status(), 201);
    let other = app.login("other-editor", "password-123").await;
    let listed = app.client.get(app.url("/api/v1/alerts")).bearer_auth(&other).send().await.unwrap();
    let text = listed.text().await.unwrap();
    assert!(!text.contains("XXXXSECRETXXXX"), "another editor sees the full URL: {text}");
    let items: Items<trellis_model::api::AlertRule> = serde_json::from_str(&text).unwrap();
    assert_eq!((items.items[0].url.as_str(), items.items[0].can_manage), ("http://127.0.0.1/…", false));
    let path = format!("/api/v1/alerts/{}", rule.rule.id);
    let test = app.client.post(app.url(&format!("{path}/test"))).bearer_auth(&other).json(&json!({}));
    problem(test.send().await.unwrap(), 403).await;
    problem(app.client.delete(app.url(&path)).bearer_auth(&other).send().await.unwrap(), 403).await;

    let as_admin: Items<trellis_model::api::AlertRule> =
        app.get("/api/v1/alerts").send().await.unwrap().json().await.unwrap();
    assert!(as_admin.items[0].can_manage && as_admin.items[0].url == secret_url);
    let deleted = app.client.delete(app.url(&path)).bearer_auth(&owner).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
}

on_both!(
    one_signed_alert_per_failure_and_none_for_successes,
    failures_of_one_group_within_the_window_are_counted_not_sent,
    a_receiver_answering_500_is_retried_and_each_attempt_logged,
    send_test_posts_a_signed_test_and_logs_it,
    refused_addresses_and_bad_fields_are_422_and_readers_get_403,
    a_claim_gives_each_delivery_its_rules_address_and_secret,
    another_editors_rule_shows_only_its_host_and_cannot_be_tested_or_deleted,
);
