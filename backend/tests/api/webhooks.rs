//! Webhook triggers: Standard Webhooks signatures, replay and dedupe, secret rotation, the
//! GitHub preset, body and rate limits, input mapping and the delivery log.

use crate::common::{both_backends, problem, TestApp};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use reqwest::RequestBuilder;
use serde_json::{json, Value};
use sha2::Sha256;

/// Creates a webhook trigger on `workflow` with `settings`; returns (trigger id, secret).
pub async fn create_webhook(app: &TestApp, workflow: &str, settings: Value) -> (String, String) {
    let mut body = json!({"kind": "webhook"});
    body.as_object_mut().unwrap().extend(settings.as_object().unwrap().clone());
    let response = app.post(&format!("/api/v1/workflows/{workflow}/triggers")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201, "create webhook");
    let created: Value = response.json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(created["url"].as_str().unwrap().ends_with(&format!("/hooks/{id}")), "{created}");
    (id, created["secret"].as_str().unwrap().to_owned())
}

/// `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` keyed by the secret's bytes.
pub fn signature(secret: &str, id: &str, timestamp: i64, body: &str) -> String {
    let key = STANDARD.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// A delivery signed now with `secret`.
fn signed(app: &TestApp, trigger: &str, secret: &str, id: &str, body: &str) -> RequestBuilder {
    signed_at(app, trigger, secret, id, body, chrono::Utc::now().timestamp())
}

fn signed_at(app: &TestApp, trigger: &str, secret: &str, id: &str, body: &str, ts: i64) -> RequestBuilder {
    app.client
        .post(app.url(&format!("/hooks/{trigger}")))
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature(secret, id, ts, body))
        .body(body.to_owned())
}

/// A delivery with exactly these headers.
async fn raw(app: &TestApp, trigger: &str, headers: &[(&'static str, String)], body: &str) -> reqwest::Response {
    let mut request = app.client.post(app.url(&format!("/hooks/{trigger}"))).body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().await.unwrap()
}

async fn started(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 202, "delivery accepted");
    response.json::<Value>().await.unwrap()["instance_id"].as_str().unwrap().to_owned()
}

pub async fn deliveries(app: &TestApp, trigger: &str) -> Vec<Value> {
    let log: Value =
        app.get(&format!("/api/v1/triggers/{trigger}/deliveries")).send().await.unwrap().json().await.unwrap();
    log["items"].as_array().unwrap().clone()
}

async fn instance_count(app: &TestApp, workflow: &str) -> usize {
    let list: Value =
        app.get(&format!("/api/v1/instances?workflow={workflow}")).send().await.unwrap().json().await.unwrap();
    list["items"].as_array().unwrap().len()
}

fn noop() -> Value {
    json!({"nodes": [{"id": "a", "type": "noop"}]})
}

async fn a_signed_delivery_starts_an_instance_with_the_body_as_input(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({"name": "orders"})).await;
    assert!(secret.starts_with("whsec_"));
    let instance = started(signed(&app, &trigger, &secret, "msg_1", r#"{"order": 7}"#).send().await.unwrap()).await;
    assert_eq!(app.instance(&instance).await.input, json!({"order": 7}));
    let shown: Value = app.get(&format!("/api/v1/triggers/{trigger}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(shown["name"], "orders");
    assert!(shown.get("secret").is_none(), "the secret is shown once, at creation");
    let log = deliveries(&app, &trigger).await;
    assert_eq!(log.len(), 1);
    assert_eq!((log[0]["outcome"].as_str(), log[0]["status"].as_i64()), (Some("started"), Some(202)));
    assert_eq!(
        (log[0]["delivery_id"].as_str(), log[0]["instance_id"].as_str()),
        (Some("msg_1"), Some(instance.as_str()))
    );
    assert_eq!(log[0]["verified"], true);
}

async fn wrong_or_missing_signatures_and_skewed_timestamps_are_401(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    let (_, other) = create_webhook(&app, &wf, json!({})).await;
    problem(signed(&app, &trigger, &other, "m1", "{}").send().await.unwrap(), 401).await;
    let bare = app.client.post(app.url(&format!("/hooks/{trigger}"))).body("{}").send().await.unwrap();
    assert!(problem(bare, 401).await["detail"].as_str().unwrap().contains("webhook-id"));
    let now = chrono::Utc::now().timestamp();
    let unsigned =
        raw(&app, &trigger, &[("webhook-id", "m2".into()), ("webhook-timestamp", now.to_string())], "{}").await;
    assert!(problem(unsigned, 401).await["detail"].as_str().unwrap().contains("webhook-signature"));
    // Well past the ±300 s tolerance, so the seconds a loaded machine spends on the requests
    // above cannot bring `now + ...` back inside it.
    for ts in [now - 360, now + 360] {
        let skewed = problem(signed_at(&app, &trigger, &secret, "m3", "{}", ts).send().await.unwrap(), 401).await;
        assert!(skewed["detail"].as_str().unwrap().contains("off the server's clock"), "{skewed}");
    }
    let sig = signature(&secret, "m4", now, "{}");
    let garbage = raw(
        &app,
        &trigger,
        &[("webhook-id", "m4".into()), ("webhook-timestamp", "soon".into()), ("webhook-signature", sig)],
        "{}",
    )
    .await;
    problem(garbage, 401).await;
    // A body changed after signing does not verify.
    let tampered = signed(&app, &trigger, &secret, "m5", r#"{"a":1}"#).body(r#"{"a":2}"#).send().await.unwrap();
    problem(tampered, 401).await;
    // Several signatures: one that matches is enough.
    let ts = chrono::Utc::now().timestamp();
    let both = format!("v1,AAAA {}", signature(&secret, "m6", ts, "{}"));
    let headers = [("webhook-id", "m6".to_owned()), ("webhook-timestamp", ts.to_string()), ("webhook-signature", both)];
    started(raw(&app, &trigger, &headers, "{}").await).await;
    assert_eq!(instance_count(&app, &wf).await, 1, "nothing started by refused deliveries");
    let log = deliveries(&app, &trigger).await;
    let refused: Vec<&Value> = log.iter().filter(|d| d["outcome"] == "rejected").collect();
    assert_eq!(refused.len(), 7);
    assert!(refused
        .iter()
        .all(|d| d["status"] == 401 && d["verified"] == false && d["reason"].as_str().is_some_and(|r| !r.is_empty())));
}

async fn a_replayed_webhook_id_returns_the_first_instance_and_starts_nothing(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    let first = started(signed(&app, &trigger, &secret, "evt_42", r#"{"n":1}"#).send().await.unwrap()).await;
    let again = signed(&app, &trigger, &secret, "evt_42", r#"{"n":1}"#).send().await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.json::<Value>().await.unwrap()["instance_id"], first.as_str());
    assert_eq!(instance_count(&app, &wf).await, 1);
    assert_eq!(deliveries(&app, &trigger).await[0]["outcome"], "duplicate");
}

async fn concurrent_copies_of_one_delivery_start_exactly_one_instance(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    let copies = (0..20).map(|_| {
        let request = signed(&app, &trigger, &secret, "evt_race", r#"{"n":1}"#);
        async move {
            let response = request.send().await.unwrap();
            assert!([200, 202].contains(&response.status().as_u16()), "{}", response.status());
            response.json::<Value>().await.unwrap()["instance_id"].as_str().unwrap().to_owned()
        }
    });
    let ids = crate::drafts::futures_join_all(copies).await;
    assert!(ids.iter().all(|id| id == &ids[0]), "every copy got the one instance");
    assert_eq!(instance_count(&app, &wf).await, 1);
}

async fn after_a_rotation_the_previous_secret_verifies_until_its_grace_ends(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, first) = create_webhook(&app, &wf, json!({})).await;
    let rotated: Value =
        app.post(&format!("/api/v1/triggers/{trigger}/rotate-secret")).send().await.unwrap().json().await.unwrap();
    let second = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    assert!(rotated["previous_secret_valid_until"].is_string());
    started(signed(&app, &trigger, &first, "r1", "{}").send().await.unwrap()).await;
    started(signed(&app, &trigger, &second, "r2", "{}").send().await.unwrap()).await;
    let rotated = app
        .post(&format!("/api/v1/triggers/{trigger}/rotate-secret"))
        .json(&json!({"grace_ms": 0}))
        .send()
        .await
        .unwrap();
    let third = rotated.json::<Value>().await.unwrap()["secret"].as_str().unwrap().to_owned();
    problem(signed(&app, &trigger, &second, "r3", "{}").send().await.unwrap(), 401).await;
    problem(signed(&app, &trigger, &first, "r4", "{}").send().await.unwrap(), 401).await;
    started(signed(&app, &trigger, &third, "r5", "{}").send().await.unwrap()).await;
    let too_long = app
        .post(&format!("/api/v1/triggers/{trigger}/rotate-secret"))
        .json(&json!({"grace_ms": u64::MAX}))
        .send()
        .await
        .unwrap();
    problem(too_long, 422).await;
}

async fn the_github_preset_checks_x_hub_signature_256_and_dedupes_by_delivery(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({"preset": "github"})).await;
    let body = r#"{"action":"opened"}"#;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let send = |sig: String| {
        app.client
            .post(app.url(&format!("/hooks/{trigger}")))
            .header("x-hub-signature-256", sig)
            .header("x-github-delivery", "gh-1")
            .header("x-github-event", "issues")
            .body(body)
            .send()
    };
    let first = started(send(format!("sha256={hex}")).await.unwrap()).await;
    let again = send(format!("sha256={hex}")).await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.json::<Value>().await.unwrap()["instance_id"], first.as_str());
    problem(send("sha256=00ff".into()).await.unwrap(), 401).await;
    problem(send("md5=00ff".into()).await.unwrap(), 401).await;
}

async fn an_oversized_body_is_413_and_logged(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, _) = create_webhook(&app, &wf, json!({})).await;
    let huge = format!(r#"{{"blob": "{}"}}"#, "x".repeat(300 * 1024));
    let (status, text) =
        crate::bad_input::send_while_reading(&app, "POST", &format!("/hooks/{trigger}"), huge.into_bytes()).await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("application/problem+json"));
    assert_eq!(deliveries(&app, &trigger).await[0]["status"], 413);
}

async fn beyond_the_rate_limit_deliveries_get_429_with_retry_after(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({"rate_limit_per_minute": 2})).await;
    started(signed(&app, &trigger, &secret, "a", "{}").send().await.unwrap()).await;
    started(signed(&app, &trigger, &secret, "b", "{}").send().await.unwrap()).await;
    let limited = signed(&app, &trigger, &secret, "c", "{}").send().await.unwrap();
    let retry: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    problem(limited, 429).await;
    // A repeat of an accepted delivery is still answered: it starts nothing.
    assert_eq!(signed(&app, &trigger, &secret, "a", "{}").send().await.unwrap().status(), 200);
    assert_eq!(instance_count(&app, &wf).await, 2);
    let zero = app
        .post(&format!("/api/v1/workflows/{wf}/triggers"))
        .json(&json!({"kind": "webhook", "rate_limit_per_minute": 0}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(zero, 422).await["errors"][0]["path"], "rate_limit_per_minute");
    assert_eq!(deliveries(&app, &trigger).await.iter().filter(|d| d["outcome"] == "rate_limited").count(), 1);
}

/// The workflow's own `rate_limit` refuses a delivery as it refuses a REST start: 429 with
/// `Retry-After`, logged `rate_limited`, nothing started.
async fn a_workflow_rate_limit_refuses_deliveries_and_logs_them_rate_limited(app: TestApp) {
    let limited =
        json!({"nodes": [{"id": "a", "type": "noop"}], "settings": {"rate_limit": {"limit": 1, "period_ms": 60000}}});
    let wf = app.publish(limited).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    started(signed(&app, &trigger, &secret, "r1", "{}").send().await.unwrap()).await;
    let refused = signed(&app, &trigger, &secret, "r2", "{}").send().await.unwrap();
    assert!(refused.headers().contains_key("retry-after"));
    let body = problem(refused, 429).await;
    assert!(body["detail"].as_str().unwrap().contains("rate_limit"), "{body}");
    let log = deliveries(&app, &trigger).await;
    let outcomes: Vec<&str> = log.iter().filter_map(|d| d["outcome"].as_str()).collect();
    assert!(outcomes.contains(&"rate_limited") && outcomes.contains(&"started"), "{outcomes:?}");
    assert_eq!(instance_count(&app, &wf).await, 1);
}

async fn an_input_mapping_shapes_the_input_from_body_and_headers(app: TestApp) {
    let wf = app.publish(noop()).await;
    let mapping = "{'order': body.order.id, 'event': headers['x-event']}";
    let (trigger, secret) = create_webhook(&app, &wf, json!({"input_mapping": mapping})).await;
    let body = r#"{"order": {"id": 99, "lines": []}}"#;
    let instance =
        started(signed(&app, &trigger, &secret, "i1", body).header("x-event", "paid").send().await.unwrap()).await;
    assert_eq!(app.instance(&instance).await.input, json!({"order": 99, "event": "paid"}));
    let failed = problem(signed(&app, &trigger, &secret, "i2", r#"{"other": 1}"#).send().await.unwrap(), 422).await;
    assert!(failed["detail"].as_str().unwrap().contains("input mapping"));
    let not_json = problem(signed(&app, &trigger, &secret, "i3", "order=1").send().await.unwrap(), 400).await;
    assert!(not_json["detail"].as_str().unwrap().contains("JSON"));
    let bad = app
        .post(&format!("/api/v1/workflows/{wf}/triggers"))
        .json(&json!({"kind": "webhook", "input_mapping": "body.("}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(bad, 422).await["errors"][0]["path"], "input_mapping");
}

async fn a_delivery_for_an_unpublished_or_paused_workflow_is_a_409_saying_why(app: TestApp) {
    let created = app.create_workflow(json!({"name": "draft only", "definition": noop()})).await;
    let wf = created.summary.id.as_str();
    let (trigger, secret) = create_webhook(&app, wf, json!({})).await;
    let refused = problem(signed(&app, &trigger, &secret, "u1", "{}").send().await.unwrap(), 409).await;
    assert!(refused["detail"].as_str().unwrap().contains("publish"));
    assert!(deliveries(&app, &trigger).await[0]["reason"].as_str().unwrap().contains("publish"));
    assert_eq!(app.post(&format!("/api/v1/workflows/{wf}/versions")).send().await.unwrap().status(), 201);
    let paused = app.patch(&format!("/api/v1/triggers/{trigger}")).json(&json!({"paused": true})).send().await.unwrap();
    assert_eq!(paused.json::<Value>().await.unwrap()["paused"], true);
    problem(signed(&app, &trigger, &secret, "u2", "{}").send().await.unwrap(), 409).await;
    app.patch(&format!("/api/v1/triggers/{trigger}")).json(&json!({"paused": false})).send().await.unwrap();
    started(signed(&app, &trigger, &secret, "u1", "{}").send().await.unwrap()).await;
}

async fn triggers_are_listed_changed_deleted_and_guarded(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    let listed: Value =
        app.get(&format!("/api/v1/workflows/{wf}/triggers")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let renamed: Value = app
        .patch(&format!("/api/v1/triggers/{trigger}"))
        .json(&json!({"name": "renamed", "preset": "github"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((renamed["name"].as_str(), renamed["preset"].as_str()), (Some("renamed"), Some("github")));
    let to_cron =
        app.patch(&format!("/api/v1/triggers/{trigger}")).json(&json!({"kind": "cron"})).send().await.unwrap();
    problem(to_cron, 422).await;
    let unknown = app
        .post(&format!("/api/v1/workflows/{wf}/triggers"))
        .json(&json!({"kind": "webhook", "colour": "red"}))
        .send()
        .await
        .unwrap();
    assert!(problem(unknown, 422).await["detail"].as_str().unwrap().contains("colour"));
    problem(
        app.post(&format!("/api/v1/workflows/{wf}/triggers")).json(&json!({"kind": "email"})).send().await.unwrap(),
        422,
    )
    .await;
    let missing = uuid::Uuid::now_v7();
    problem(
        app.post(&format!("/api/v1/workflows/{missing}/triggers"))
            .json(&json!({"kind": "webhook"}))
            .send()
            .await
            .unwrap(),
        404,
    )
    .await;
    let viewer = app.token_for("viewer").await;
    let as_viewer =
        app.client.delete(app.url(&format!("/api/v1/triggers/{trigger}"))).bearer_auth(&viewer).send().await.unwrap();
    problem(as_viewer, 403).await;
    let deleted =
        app.as_admin(app.client.delete(app.url(&format!("/api/v1/triggers/{trigger}")))).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    problem(app.get(&format!("/api/v1/triggers/{trigger}")).send().await.unwrap(), 404).await;
    problem(signed(&app, &trigger, &secret, "gone", "{}").send().await.unwrap(), 404).await;
    problem(app.client.post(app.url("/hooks/not-a-uuid")).send().await.unwrap(), 404).await;
    let refused = app.client.get(app.url(&format!("/hooks/{trigger}"))).send().await.unwrap();
    assert_eq!(refused.headers()["allow"], "POST", "a 405 says which method a webhook takes");
    problem(refused, 405).await;
    let id = uuid::Uuid::now_v7();
    for (method, path) in [
        ("GET", format!("/api/v1/workflows/{id}/triggers")),
        ("POST", format!("/api/v1/workflows/{id}/triggers")),
        ("GET", format!("/api/v1/triggers/{id}")),
        ("PATCH", format!("/api/v1/triggers/{id}")),
        ("DELETE", format!("/api/v1/triggers/{id}")),
        ("POST", format!("/api/v1/triggers/{id}/rotate-secret")),
        ("GET", format!("/api/v1/triggers/{id}/deliveries")),
        ("GET", format!("/api/v1/triggers/{id}/preview")),
        ("POST", "/api/v1/triggers/preview".to_owned()),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = app
            .client
            .request(method.clone(), app.url(&path))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{method} {path}");
    }
}
both_backends!(
    a_signed_delivery_starts_an_instance_with_the_body_as_input,
    wrong_or_missing_signatures_and_skewed_timestamps_are_401,
    a_replayed_webhook_id_returns_the_first_instance_and_starts_nothing,
    concurrent_copies_of_one_delivery_start_exactly_one_instance,
    after_a_rotation_the_previous_secret_verifies_until_its_grace_ends,
    the_github_preset_checks_x_hub_signature_256_and_dedupes_by_delivery,
    an_oversized_body_is_413_and_logged,
    beyond_the_rate_limit_deliveries_get_429_with_retry_after,
    a_workflow_rate_limit_refuses_deliveries_and_logs_them_rate_limited,
    an_input_mapping_shapes_the_input_from_body_and_headers,
    a_delivery_for_an_unpublished_or_paused_workflow_is_a_409_saying_why,
    triggers_are_listed_changed_deleted_and_guarded
);

/// `sha256=<hex HMAC-SHA256 of the body>` keyed by the secret's text, as GitHub signs.
fn github_signature(secret: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

async fn a_paused_trigger_answers_409_only_to_a_correctly_signed_delivery(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({"paused": true})).await;
    let ts = chrono::Utc::now().timestamp();
    let unsigned =
        raw(&app, &trigger, &[("webhook-id", "p1".into()), ("webhook-timestamp", ts.to_string())], "{}").await;
    problem(unsigned, 401).await;
    let forged = raw(
        &app,
        &trigger,
        &[
            ("webhook-id", "p2".into()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", signature("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "p2", ts, "{}")),
        ],
        "{}",
    )
    .await;
    problem(forged, 401).await;
    let signed = problem(signed(&app, &trigger, &secret, "p3", "{}").send().await.unwrap(), 409).await;
    assert!(signed["detail"].as_str().unwrap().contains("paused"));
    assert_eq!(instance_count(&app, &wf).await, 0);
}

async fn the_github_preset_requires_a_delivery_id_and_a_replay_under_a_new_id_starts_nothing(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({"preset": "github"})).await;
    let body = r#"{"action":"opened","number":7}"#;
    let send = |delivery: Option<String>, body: &str| {
        let mut request = app
            .client
            .post(app.url(&format!("/hooks/{trigger}")))
            .header("x-hub-signature-256", github_signature(&secret, body))
            .header("x-github-event", "issues")
            .body(body.to_owned());
        if let Some(id) = delivery {
            request = request.header("x-github-delivery", id);
        }
        request.send()
    };
    let missing = problem(send(None, body).await.unwrap(), 401).await;
    assert!(missing["detail"].as_str().unwrap().contains("X-GitHub-Delivery"), "{missing}");
    assert_eq!(instance_count(&app, &wf).await, 0);

    let first = started(send(Some("gh-1".into()), body).await.unwrap()).await;
    for replayed_as in ["gh-2", "gh-3"] {
        let replay = send(Some(replayed_as.into()), body).await.unwrap();
        assert_eq!(replay.status(), 200, "a replay under {replayed_as}");
        let answer: Value = replay.json().await.unwrap();
        assert_eq!((answer["instance_id"].as_str(), answer["duplicate"].as_bool()), (Some(first.as_str()), Some(true)));
    }
    // Concurrent replays under fresh ids race past the lookup; the start's key still holds.
    let racing: Vec<_> = (0..6).map(|i| send(Some(format!("gh-race-{i}")), body)).collect();
    for response in futures_util::future::join_all(racing).await {
        assert!(matches!(response.unwrap().status().as_u16(), 200 | 202));
    }
    assert_eq!(instance_count(&app, &wf).await, 1, "a captured delivery starts nothing new");
    // Another body is another event.
    started(send(Some("gh-4".into()), r#"{"action":"closed","number":7}"#).await.unwrap()).await;
    assert_eq!(instance_count(&app, &wf).await, 2);
}

async fn a_nul_in_a_signed_webhook_body_is_a_4xx_and_the_log_keeps_it(app: TestApp) {
    let wf = app.publish(noop()).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    let body = r#"{"text": "a\u0000b", "k\u0000": 1}"#;
    let response = signed(&app, &trigger, &secret, "n1", body).send().await.unwrap();
    let status = response.status().as_u16();
    assert!((400..500).contains(&status), "{status}");
    problem(response, status).await;
    let mapped = create_webhook(&app, &wf, json!({"input_mapping": "body.text"})).await;
    let response = signed(&app, &mapped.0, &mapped.1, "n2", body).send().await.unwrap();
    let status = response.status().as_u16();
    assert!((400..500).contains(&status), "{status}");
    assert_eq!(instance_count(&app, &wf).await, 0);
    assert_eq!(deliveries(&app, &trigger).await.len(), 1, "the refused delivery is logged");
    started(signed(&app, &trigger, &secret, "n3", r#"{"text": "fine"}"#).send().await.unwrap()).await;
}
both_backends!(
    a_paused_trigger_answers_409_only_to_a_correctly_signed_delivery,
    the_github_preset_requires_a_delivery_id_and_a_replay_under_a_new_id_starts_nothing,
    a_nul_in_a_signed_webhook_body_is_a_4xx_and_the_log_keeps_it
);
