//! Nesting: a value nested deeper than stored JSON may be is refused (a start's input, a
//! signal's payload) or fails its node (an output), so nothing stored is beyond reading; and a
//! row already stored that deep (written before the limit) is shown as unreadable, never a 500
//! for every reader of the list, the detail or the export.

use crate::common::{both_backends, problem, TestApp};
use serde_json::{json, Value};
use trellis_model::nesting::MAX_JSON_DEPTH;
use trellis_model::{InstanceStatus, NodeStatus};

/// `levels` objects within each other: `{"a": {"a": … 1}}`.
fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| json!({"a": inner}))
}

fn noop() -> Value {
    json!({"nodes": [{"id": "n", "type": "noop"}]})
}

async fn start_answer(app: &TestApp, workflow: &str, input: Value) -> reqwest::Response {
    app.post(&format!("/api/v1/workflows/{workflow}/instances")).json(&json!({"input": input})).send().await.unwrap()
}

/// A failing workflow whose failure handler (a no-op) gets its input two levels down.
async fn handled(app: &TestApp) -> (String, String) {
    let handler = app.publish(noop()).await;
    let failing = json!({
        "nodes": [{"id": "boom", "type": "fail", "config": {"message": "no"}}],
        "settings": {"on_failure": {"workflow": handler, "version": "latest"}}
    });
    (app.publish(failing).await, handler)
}

async fn instances_of(app: &TestApp, workflow: &str) -> Vec<Value> {
    let list = app.get(&format!("/api/v1/instances?workflow={workflow}")).send().await.unwrap();
    assert_eq!(list.status(), 200);
    list.json::<Value>().await.unwrap()["items"].as_array().unwrap().clone()
}

async fn a_start_nested_too_deep_is_refused_naming_where(app: TestApp) {
    let (workflow, handler) = handled(&app).await;
    // At the limit: taken, and the failure handler's input (two levels deeper) reads back.
    let answer = start_answer(&app, &workflow, nested(MAX_JSON_DEPTH)).await;
    assert_eq!(answer.status(), 201);
    let failed = answer.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    assert_eq!(app.wait_finished(&failed).await.summary.status, InstanceStatus::Failed);
    let handler_run = loop {
        if let Some(run) = instances_of(&app, &handler).await.first() {
            break run["id"].as_str().unwrap().to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let handler_run = app.instance_json(&handler_run).await;
    assert_eq!(handler_run["input"]["instance"]["input"], nested(MAX_JSON_DEPTH), "wrapped, whole");
    // Past the limit: refused by the engine, whoever starts.
    let refused = problem(start_answer(&app, &workflow, nested(MAX_JSON_DEPTH + 1)).await, 422).await;
    let path = format!("/{}", vec!["a"; MAX_JSON_DEPTH].join("/"));
    assert_eq!(refused["errors"][0]["path"], path.as_str(), "{refused}");
    assert!(refused["detail"].as_str().unwrap().contains("nests deeper than 64 levels"), "{refused}");
    // Far past it (as deep as serde_json reads, and deeper): refused at the edge.
    for levels in [126, 300] {
        let refused = problem(start_answer(&app, &workflow, nested(levels)).await, 422).await;
        assert_eq!(refused["errors"][0]["code"], "too_deep", "{refused}");
        assert!(refused["errors"][0]["path"].as_str().unwrap().starts_with("input.a.a.a"), "{refused}");
    }
    assert_eq!(instances_of(&app, &workflow).await.len(), 1, "only the start within the limit");
    assert_eq!(app.get("/api/v1/instances").send().await.unwrap().status(), 200);
}

async fn outputs_nested_too_deep_fail_their_node_for_good(app: TestApp) {
    let transform =
        json!({"nodes": [{"id": "t", "type": "transform", "config": {"expression": "{'a': {'b': {'c': input}}}"}}]});
    let script = json!({"nodes": [{"id": "s", "type": "script", "config": {"source":
        "let v = 1; for (let i = 0; i < 100; i++) { v = {a: v}; } return v;"}}]});
    for (definition, node, input) in [(transform, "t", nested(MAX_JSON_DEPTH - 2)), (script, "s", json!({}))] {
        let workflow = app.publish(definition).await;
        let id = app.start(&workflow, json!({"input": input})).await;
        let done = app.wait_finished(&id).await;
        assert_eq!(done.summary.status, InstanceStatus::Failed, "{done:?}");
        let ended = crate::common::node(&done, node);
        assert_eq!((ended.status, ended.attempts), (NodeStatus::Failed, 1), "{done:?}");
        let error = ended.error.clone().unwrap_or_default();
        assert!(error.contains(&format!("the output of node `{node}` nests deeper than 64 levels")), "{error}");
    }
    assert_eq!(app.get("/api/v1/instances").send().await.unwrap().status(), 200);
}

async fn a_signal_payload_nested_too_deep_is_refused(app: TestApp) {
    let workflow = app.publish(crate::common::gated()).await;
    let id = app.start(&workflow, json!({"input": {}})).await;
    app.wait_for(&id, |i| crate::common::node(i, "gate").status == NodeStatus::Waiting).await;
    let refused = app.signal(&id, json!({"node": "gate", "payload": nested(MAX_JSON_DEPTH + 1)})).await;
    let refused = problem(refused, 422).await;
    assert!(refused["detail"].as_str().unwrap().contains("nests deeper than 64 levels"), "{refused}");
    assert_eq!(app.signal(&id, json!({"node": "gate", "payload": nested(MAX_JSON_DEPTH)})).await.status(), 200);
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
}

/// A row written before the limit (straight into the database): every read shows the
/// marker in place of what it cannot read, and answers.
async fn rows_stored_too_deep_read_as_unreadable_not_as_a_failed_read(app: TestApp) {
    let workflow = app.publish(noop()).await;
    let id = app.start(&workflow, json!({"input": {"fine": true}})).await;
    app.wait_finished(&id).await;
    let deep = nested(200).to_string();
    write_too_deep(&app, &id, &deep).await;
    let marker = json!({"$error": "stored value could not be read: nested too deep"});
    let list = app.get("/api/v1/instances").send().await.unwrap();
    assert_eq!(list.status(), 200);
    let detail = app.instance_json(&id).await;
    assert_eq!((&detail["input"], &detail["nodes"][0]["output"]), (&marker, &marker), "{detail}");
    let export = app.get("/api/v1/instances/export?format=jsonl").send().await.unwrap();
    assert_eq!(export.status(), 200);
    let line: Value = serde_json::from_str(export.text().await.unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(line["input"], marker, "{line}");
    assert_eq!(app.get("/api/v1/failures").send().await.unwrap().status(), 200);
}

/// Sets the instance's input and its node's output to `deep` (JSON text), bypassing the API.
async fn write_too_deep(app: &TestApp, id: &str, deep: &str) {
    let id = uuid::Uuid::parse_str(id).unwrap();
    let url = &app.database_url;
    if url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query("UPDATE instances SET input = $1::jsonb WHERE id = $2")
            .bind(deep)
            .bind(id)
            .execute(&pool)
            .await
            .unwrap();
        let sql = "UPDATE instance_nodes SET output = $1::jsonb WHERE instance_id = $2";
        sqlx::query(sql).bind(deep).bind(id).execute(&pool).await.unwrap();
    } else {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query("UPDATE instances SET input = $1 WHERE id = $2").bind(deep).bind(id).execute(&pool).await.unwrap();
        let sql = "UPDATE instance_nodes SET output = $1 WHERE instance_id = $2";
        sqlx::query(sql).bind(deep).bind(id).execute(&pool).await.unwrap();
    }
}

both_backends!(
    a_start_nested_too_deep_is_refused_naming_where,
    outputs_nested_too_deep_fail_their_node_for_good,
    a_signal_payload_nested_too_deep_is_refused,
    rows_stored_too_deep_read_as_unreadable_not_as_a_failed_read,
);
