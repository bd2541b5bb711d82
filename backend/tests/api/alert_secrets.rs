//! Alerts never carry a secret: a node that uses one and fails with its value in the error —
//! made by the engine (a `fail` node) or reported by an external task worker that knows the
//! value — gives an alert whose body, as the receiver on 127.0.0.1 got it, holds
//! `[secret:NAME]` and no form of the value.

use crate::alerts::{app, checked_body, create, posts, receiver};
use crate::common::{on_both, Backend};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};
use trellis_model::InstanceStatus;

/// With `+`, `/` and `=`, so its base64 and URL-encoded forms differ from it.
const TOKEN: &str = "Al3rt-s3cr3t+T0KEN/val=";

fn assert_clean(what: &str, text: &str) {
    for form in [TOKEN.to_owned(), STANDARD.encode(TOKEN), "Al3rt-s3cr3t%2BT0KEN%2Fval%3D".to_owned()] {
        assert!(!text.contains(&form), "{what} contains the secret as `{form}`:\n{text}");
    }
}

/// The worker's error: the value as it is, URL-encoded and in base64.
fn leaking_error() -> String {
    let url: String = url::form_urlencoded::byte_serialize(TOKEN.as_bytes()).collect();
    format!("upstream refused {TOKEN} (sent as ?key={url}, basic {})", STANDARD.encode(TOKEN))
}

/// Plays the external worker: takes the task from `queue` and fails it with the secret's value
/// in the error. The task's input it gets names the secret, never its value.
async fn worker_fails_with_the_value(app: &crate::common::TestApp, queue: &str) {
    let poll = json!({"queue": queue, "worker": "w1", "wait_ms": 10_000});
    let task: Value = app.post("/api/v1/tasks/poll").json(&poll).send().await.unwrap().json().await.unwrap();
    assert_eq!(task["input"]["auth"], "Bearer [secret:TOKEN]", "{task}");
    let id = task["id"].as_str().unwrap();
    let fail = json!({"lease_token": task["lease_token"], "error": leaking_error(), "retryable": false});
    let answer = app.post(&format!("/api/v1/tasks/{id}/fail")).json(&fail).send().await.unwrap();
    assert_eq!(answer.status(), 204);
}

async fn an_alert_body_never_holds_a_secret_a_failed_node_used(backend: Backend) {
    let app = app(backend).await;
    let created = app.post("/api/v1/secrets").json(&json!({"name": "TOKEN", "value": TOKEN})).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let (url, inbox) = receiver(vec![]).await;
    let rule = create(&app, json!({"name": "ops", "when": "failed", "url": url})).await;
    let failing = app
        .publish(json!({"nodes": [{"id": "boom", "type": "fail", "config": {"message": "{{ secret.TOKEN }} leaked"}}]}))
        .await;
    let task = json!({"queue": "alert-secrets", "input": {"auth": "Bearer {{ secret.TOKEN }}"}});
    let worked = app.publish(json!({"nodes": [{"id": "work", "type": "task", "config": task}]})).await;

    let by_engine = app.start(&failing, json!({})).await;
    let by_worker = app.start(&worked, json!({})).await;
    worker_fails_with_the_value(&app, "alert-secrets").await;
    for id in [&by_engine, &by_worker] {
        let ended = app.wait_finished(id).await;
        assert_eq!(ended.summary.status, InstanceStatus::Failed);
        assert_clean("the instance", &app.instance_json(id).await.to_string());
    }

    let got = posts(&inbox, 2).await;
    assert_eq!(got.len(), 2, "one alert per failure");
    let mut from: Vec<(String, String)> = Vec::new();
    for post in &got {
        let raw = String::from_utf8(post.1.to_vec()).unwrap();
        assert_clean("an alert body", &raw);
        let body = checked_body(&rule.secret, post);
        let error = body["instance"]["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains("[secret:TOKEN]"), "the error is kept, the value replaced: {body}");
        from.push((body["instance"]["id"].as_str().unwrap().to_owned(), error));
    }
    from.sort();
    let mut expected = vec![by_engine.clone(), by_worker.clone()];
    expected.sort();
    assert_eq!(from.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(), expected);
    let worker_error = &from.iter().find(|(id, _)| *id == by_worker).unwrap().1;
    assert!(worker_error.contains("upstream refused [secret:TOKEN] (sent as ?key=[secret:TOKEN]"), "{worker_error}");
    // The delivery log shows the same body.
    let logged = app.get(&format!("/api/v1/alerts/{}/deliveries", rule.rule.id)).send().await.unwrap();
    assert_clean("the delivery log", &logged.text().await.unwrap());
}

/// A worker's output is redacted too, as an engine-made output is.
async fn a_task_output_holding_a_secret_is_stored_redacted(backend: Backend) {
    let app = app(backend).await;
    let created = app.post("/api/v1/secrets").json(&json!({"name": "TOKEN", "value": TOKEN})).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let task = json!({"queue": "out-secrets", "input": {"auth": "Bearer {{ secret.TOKEN }}"}});
    let wf = app.publish(json!({"nodes": [{"id": "work", "type": "task", "config": task}]})).await;
    let id = app.start(&wf, json!({})).await;
    let poll = json!({"queue": "out-secrets", "worker": "w1", "wait_ms": 10_000});
    let leased: Value = app.post("/api/v1/tasks/poll").json(&poll).send().await.unwrap().json().await.unwrap();
    let done = json!({"lease_token": leased["lease_token"], "output": {"echo": TOKEN, "n": 1}});
    let path = format!("/api/v1/tasks/{}/complete", leased["id"].as_str().unwrap());
    assert_eq!(app.post(&path).json(&done).send().await.unwrap().status(), 204);
    let ended = app.wait_finished(&id).await;
    assert_eq!(ended.summary.status, InstanceStatus::Succeeded);
    assert_clean("the instance", &app.instance_json(&id).await.to_string());
    let output = crate::common::node(&ended, "work").output.clone().unwrap();
    assert_eq!(output, json!({"echo": "[secret:TOKEN]", "n": 1}));
}

on_both!(an_alert_body_never_holds_a_secret_a_failed_node_used, a_task_output_holding_a_secret_is_stored_redacted);
