//! Input schemas: `settings.input_schema` is checked at every start (REST, webhook,
//! sub-workflow, a cron's input at save); a violation lists each JSON path and creates
//! nothing; a schema that is not one is refused at save.

use crate::common::{both_backends, node, problem, TestApp};
use crate::webhooks::{create_webhook, signature};
use serde_json::{json, Value};
use trellis_model::InstanceStatus;

/// An order: an integer id, a quantity of at least 1 and an optional email.
fn order_schema() -> Value {
    json!({
        "type": "object",
        "required": ["order"],
        "properties": {"order": {"type": "object", "required": ["id", "quantity"], "properties": {
            "id": {"type": "integer"},
            "quantity": {"type": "integer", "minimum": 1},
            "email": {"type": "string", "format": "email"}
        }}}
    })
}

fn typed(schema: Value) -> Value {
    json!({"nodes": [{"id": "a", "type": "noop"}], "settings": {"input_schema": schema}})
}

/// The problem's `errors`, as (path, message) pairs sorted by path.
fn violations(body: &Value) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["code"], "input_schema", "{e}");
            (e["path"].as_str().unwrap().to_owned(), e["message"].as_str().unwrap().to_owned())
        })
        .collect();
    found.sort();
    found
}

/// The workflow's instances as the list reports them: (items, total of the counts).
async fn listed(app: &TestApp, workflow: &str) -> (usize, i64) {
    let list: Value =
        app.get(&format!("/api/v1/instances?workflow={workflow}")).send().await.unwrap().json().await.unwrap();
    let counted = list["counts"].as_object().unwrap().values().filter_map(Value::as_i64).sum();
    (list["items"].as_array().unwrap().len(), counted)
}

async fn a_violating_rest_start_is_422_listing_each_path_and_creates_nothing(app: TestApp) {
    let wf = app.publish(typed(order_schema())).await;
    let start = |input: Value| {
        app.post(&format!("/api/v1/workflows/{wf}/instances"))
            .header("Idempotency-Key", "order-1")
            .json(&json!({"input": input}))
            .send()
    };
    let bad = json!({"order": {"id": "abc", "quantity": 0, "email": "nobody"}});
    let body = problem(start(bad.clone()).await.unwrap(), 422).await;
    let found = violations(&body);
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["/order/email", "/order/id", "/order/quantity"], "{body}");
    assert!(found.iter().any(|(_, m)| m == r#"/order/id: "abc" is not of type "integer""#), "{found:?}");
    assert!(body["detail"].as_str().unwrap().contains("/order/quantity"), "{body}");
    // A missing required property is reported at the object that lacks it.
    let missing = violations(&problem(start(json!({})).await.unwrap(), 422).await);
    assert_eq!(missing.len(), 1);
    assert!(missing[0].0.is_empty() && missing[0].1.contains("\"order\" is a required property"), "{missing:?}");
    assert_eq!(listed(&app, &wf).await, (0, 0), "nothing created");

    // The same Idempotency-Key was not used up by the refusals: a valid start takes it.
    let good = start(json!({"order": {"id": 7, "quantity": 2}})).await.unwrap();
    assert_eq!(good.status(), 201, "{}", good.text().await.unwrap());
    assert_eq!(listed(&app, &wf).await, (1, 1));
}

async fn a_violating_webhook_delivery_is_422_to_the_sender_and_starts_nothing(app: TestApp) {
    let wf = app.publish(typed(order_schema())).await;
    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    let deliver = |id: &'static str, body: &'static str| {
        let ts = chrono::Utc::now().timestamp();
        app.client
            .post(app.url(&format!("/hooks/{trigger}")))
            .header("content-type", "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", signature(&secret, id, ts, body))
            .body(body)
            .send()
    };
    let body = problem(deliver("m1", r#"{"order": {"id": 1.5}}"#).await.unwrap(), 422).await;
    let paths: Vec<String> = violations(&body).into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, ["/order", "/order/id"], "{body}");
    assert_eq!(listed(&app, &wf).await, (0, 0), "nothing created");
    let log = crate::webhooks::deliveries(&app, &trigger).await;
    assert_eq!(log.len(), 1);
    assert_eq!((log[0]["outcome"].as_str(), log[0]["status"].as_i64()), (Some("rejected"), Some(422)), "{log:?}");
    assert!(log[0]["instance_id"].is_null());

    let ok = deliver("m2", r#"{"order": {"id": 1, "quantity": 3}}"#).await.unwrap();
    assert_eq!(ok.status(), 202);
    assert_eq!(listed(&app, &wf).await.0, 1);
}

/// An 80-branch `allOf` over a 250 KB input: each failing branch would quote the whole input.
async fn many_violations_of_a_large_input_are_answered_and_logged_short(app: TestApp) {
    let branches: Vec<Value> = (0..80).map(|i| json!({"type": "array", "title": format!("branch {i}")})).collect();
    let wf = app.publish(typed(json!({"allOf": branches}))).await;
    let body = json!({"text": "x".repeat(250_000)}).to_string();
    let answer =
        app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"input": {"text": "x".repeat(250_000)}}));
    let answer = answer.send().await.unwrap();
    assert_eq!(answer.status(), 422);
    let text = answer.text().await.unwrap();
    assert!(text.len() < 100_000, "a short answer, not the input per violation: {} bytes", text.len());
    let refused: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(refused["errors"].as_array().unwrap().len(), 50, "{refused}");
    assert!(refused["detail"].as_str().unwrap().ends_with("; and 30 more"), "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(message.starts_with(r#"/: {"text":"xxxx"#) && message.contains("…(cut)"), "{message}");

    let (trigger, secret) = create_webhook(&app, &wf, json!({})).await;
    let ts = chrono::Utc::now().timestamp();
    let delivered = app.client.post(app.url(&format!("/hooks/{trigger}"))).header("content-type", "application/json");
    let delivered = delivered
        .header("webhook-id", "big")
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature(&secret, "big", ts, &body))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(delivered.status(), 422);
    let log = crate::webhooks::deliveries(&app, &trigger).await;
    let reason = log[0]["reason"].as_str().unwrap();
    assert!(reason.len() <= 4096 + "…(cut)".len() && reason.ends_with("…(cut)"), "{} bytes: {reason}", reason.len());
    assert!(reason.starts_with("the input does not match the workflow's input_schema: /: {\"text\":\"xxx"), "{reason}");
}

async fn a_child_whose_input_violates_its_schema_fails_the_node_naming_the_path(app: TestApp) {
    let child = app.publish(typed(order_schema())).await;
    let parent = app
        .publish(json!({"nodes": [{"id": "sub", "type": "subworkflow",
            "config": {"workflow": child, "input": "{'order': {'id': input.id, 'quantity': 1}}"}}]}))
        .await;
    let failed = app.start(&parent, json!({"input": {"id": "abc"}})).await;
    let done = app.wait_finished(&failed).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let sub = node(&done, "sub");
    let error = sub.error.as_deref().unwrap_or_default();
    assert!(error.contains(r#"/order/id: "abc" is not of type "integer""#), "{error}");
    assert_eq!(sub.attempts, 1, "a violation is permanent: not retried");
    assert_eq!(listed(&app, &child).await, (0, 0), "no child created");

    let fine = app.start(&parent, json!({"input": {"id": 4}})).await;
    assert_eq!(app.wait_finished(&fine).await.summary.status, InstanceStatus::Succeeded);
}

async fn a_schema_that_is_not_one_is_refused_at_save_naming_the_setting(app: TestApp) {
    let created = app.create_workflow(json!({"name": "typed", "definition": typed(json!(true))})).await;
    let id = created.summary.id;
    for (schema, why) in [
        (json!(42), "must be a JSON Schema"),
        (json!({"type": "intger"}), "not a valid JSON Schema"),
        (json!({"properties": {"a": {"pattern": "(?<=x)y"}}}), "not a valid JSON Schema"),
    ] {
        let saved =
            app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&typed(schema.clone()));
        let saved = saved.send().await.unwrap();
        assert_eq!(saved.status(), 200, "a draft is kept with its problems");
        let body: Value = saved.json().await.unwrap();
        let issue = body["problems"].as_array().unwrap().iter().find(|e| e["path"] == "settings.input_schema");
        let issue = issue.unwrap_or_else(|| panic!("{schema} was not named: {body}"));
        assert!(issue["message"].as_str().unwrap().contains(why), "{schema}: {issue}");
    }
    let saved = app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&typed(order_schema()));
    assert_eq!(saved.send().await.unwrap().status(), 200);
}

async fn a_cron_whose_fixed_input_violates_the_schema_is_refused_at_save(app: TestApp) {
    let wf = app.publish(typed(json!({"type": "object", "required": ["region"]}))).await;
    let create = |expression: &str| {
        app.post(&format!("/api/v1/workflows/{wf}/triggers"))
            .json(&json!({"kind": "cron", "expression": expression}))
            .send()
    };
    let body = problem(create("0 9 * * *").await.unwrap(), 422).await;
    assert!(body["detail"].as_str().unwrap().contains("every tick"), "{body}");
    assert!(body["errors"][0]["message"].as_str().unwrap().contains("\"region\" is a required property"), "{body}");
    let triggers: Value =
        app.get(&format!("/api/v1/workflows/{wf}/triggers")).send().await.unwrap().json().await.unwrap();
    assert_eq!(triggers["items"], json!([]));

    // A schema that takes the schedule's input lets the trigger be saved.
    let takes = json!({"type": "object", "required": ["trigger_id", "scheduled_at"],
        "properties": {"scheduled_at": {"type": "string", "format": "date-time"}}});
    let wf2 = app.publish(typed(takes)).await;
    let ok = app
        .post(&format!("/api/v1/workflows/{wf2}/triggers"))
        .json(&json!({"kind": "cron", "expression": "0 9 * * *"}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 201, "{}", ok.text().await.unwrap());
}

both_backends!(
    a_violating_rest_start_is_422_listing_each_path_and_creates_nothing,
    a_violating_webhook_delivery_is_422_to_the_sender_and_starts_nothing,
    many_violations_of_a_large_input_are_answered_and_logged_short,
    a_child_whose_input_violates_its_schema_fails_the_node_naming_the_path,
    a_schema_that_is_not_one_is_refused_at_save_naming_the_setting,
    a_cron_whose_fixed_input_violates_the_schema_is_refused_at_save,
);
