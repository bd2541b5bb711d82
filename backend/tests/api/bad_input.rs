use crate::common::{both_backends, chain, problem, TestApp};
use serde_json::{json, Value};

async fn malformed_json_is_400_and_a_wrong_content_type_415(app: TestApp) {
    let malformed = app
        .post("/api/v1/workflows")
        .header("content-type", "application/json")
        .body(r#"{"name": "unterminated"#)
        .send()
        .await
        .unwrap();
    problem(malformed, 400).await;
    let form = app
        .post("/api/v1/workflows")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("name=x")
        .send()
        .await
        .unwrap();
    let body = problem(form, 415).await;
    assert!(body["detail"].as_str().unwrap().contains("application/json"));
    let none = app.post("/api/v1/workflows").body(r#"{"name":"x"}"#).send().await.unwrap();
    problem(none, 415).await;
    assert_workflow_count(&app, 0).await;
}

async fn unknown_fields_are_422_naming_the_field(app: TestApp) {
    let response = app.post("/api/v1/workflows").json(&json!({"name": "x", "colour": "red"})).send().await.unwrap();
    let body = problem(response, 422).await;
    assert!(body["detail"].as_str().unwrap().contains("colour"), "{body}");
    let nested = app
        .post("/api/v1/workflows")
        .json(&json!({"name": "x", "definition": {"nodes": [{"id": "a", "type": "noop", "retries": 3}]}}))
        .send()
        .await
        .unwrap();
    let body = problem(nested, 422).await;
    assert!(body["detail"].as_str().unwrap().contains("retries"), "{body}");
    assert_workflow_count(&app, 0).await;
}

/// A cyclic graph is kept as a draft (unfinished work is never lost) with the cycle named as
/// its problem, and publishing it is refused naming the cycle.
async fn a_cyclic_graph_is_kept_as_a_draft_and_refused_at_publish_naming_the_cycle(app: TestApp) {
    let cyclic = json!({
        "nodes": [{"id": "x", "type": "noop"}, {"id": "y", "type": "noop"}, {"id": "z", "type": "noop"}],
        "edges": [{"from": "x", "to": "y"}, {"from": "y", "to": "z"}, {"from": "z", "to": "x"}]
    });
    let response =
        app.post("/api/v1/workflows").json(&json!({"name": "loop", "definition": cyclic})).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.unwrap();
    assert_eq!(created["problems"][0]["code"], "cycle");
    assert_eq!(created["problems"][0]["cycle"], json!(["x", "y", "z"]));
    let id = created["id"].as_str().unwrap();
    let body = problem(app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap(), 422).await;
    assert_eq!(body["errors"][0]["code"], "cycle");
    assert_eq!(body["errors"][0]["cycle"], json!(["x", "y", "z"]));
}

async fn a_ten_mebibyte_body_is_413(app: TestApp) {
    let huge = format!(r#"{{"name": "{}"}}"#, "x".repeat(10 * 1024 * 1024));
    let (status, body) = send_while_reading(&app, "POST", "/api/v1/workflows", huge.into_bytes()).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("larger than this server accepts"), "{body}");
    assert_workflow_count(&app, 0).await;
}

async fn fifty_thousand_nodes_are_refused_without_a_5xx(app: TestApp) {
    let created = app.create_workflow(json!({"name": "big", "definition": chain()})).await;
    let id = created.summary.id.as_str();
    // Compact ids keep this under the body limit, so it is the node limit that answers.
    let nodes: Vec<Value> = (0..50_000).map(|i| json!({"id": format!("{i:x}"), "type": "noop"})).collect();
    let response = app
        .put(&format!("/api/v1/workflows/{id}/draft"))
        .header("if-match", "*")
        .json(&json!({"nodes": nodes}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    assert!(status == 413 || status == 422, "got {status}");
    let body = problem(response, status).await;
    if status == 422 {
        assert_eq!(body["errors"][0]["code"], "too_many_nodes");
    }
    let current: Value = app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(current["draft"], chain());
}

async fn bad_ids_cursors_limits_and_names_are_4xx(app: TestApp) {
    problem(app.get("/api/v1/workflows/not-a-uuid").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/workflows?limit=0").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/workflows?limit=abc").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/workflows?cursor=%27%3B--").send().await.unwrap(), 400).await;
    for name in ["", "   ", "tab\there", &"n".repeat(201)] {
        let response = app.post("/api/v1/workflows").json(&json!({"name": name})).send().await.unwrap();
        problem(response, 422).await;
    }
    let bad_role = app.post("/api/v1/api-keys").json(&json!({"name": "k", "role": "root"})).send().await.unwrap();
    problem(bad_role, 422).await;
    assert_workflow_count(&app, 0).await;
}
both_backends!(
    malformed_json_is_400_and_a_wrong_content_type_415,
    unknown_fields_are_422_naming_the_field,
    a_cyclic_graph_is_kept_as_a_draft_and_refused_at_publish_naming_the_cycle,
    a_ten_mebibyte_body_is_413,
    fifty_thousand_nodes_are_refused_without_a_5xx,
    bad_ids_cursors_limits_and_names_are_4xx
);

async fn assert_workflow_count(app: &crate::common::TestApp, expected: usize) {
    let list: Value = app.get("/api/v1/workflows?archived=true").send().await.unwrap().json().await.unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), expected, "nothing half-written");
}

/// Sends a request over a raw connection and reads the response while the body is still
/// being written: the server may answer (413) and close before taking the whole body, which
/// an ordinary client reports as a broken pipe instead of the response.
pub(crate) async fn send_while_reading(
    app: &crate::common::TestApp,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, String) {
    send_while_reading_as(app, &app.admin_token, method, path, body).await
}

/// `send_while_reading` with `token`'s credentials.
pub(crate) async fn send_while_reading_as(
    app: &crate::common::TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        app.addr, token, body.len()
    );
    let write = tokio::spawn(async move {
        let _ = writer.write_all(head.as_bytes()).await;
        let _ = writer.write_all(&body).await;
    });
    let mut response = Vec::new();
    let _ = reader.read_to_end(&mut response).await;
    write.abort();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

async fn nul_characters_are_refused_not_a_5xx(app: TestApp) {
    let nul = "a\u{0}b";
    let response = app.post("/api/v1/workflows").json(&json!({"name": "x", "description": nul})).send().await.unwrap();
    problem(response, 422).await;
    let definition = json!({"nodes": [{"id": "a", "type": "noop", "name": nul}]});
    let response =
        app.post("/api/v1/workflows").json(&json!({"name": "x", "definition": definition})).send().await.unwrap();
    problem(response, 422).await;
    let login = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": nul, "password": "whatever-1"}))
        .send()
        .await
        .unwrap();
    problem(login, 422).await;
    problem(app.get("/api/v1/workflows?q=a%00b").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/instances?key=a%00b").send().await.unwrap(), 400).await;
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})).await;
    let start = app
        .post(&format!("/api/v1/workflows/{wf}/instances"))
        .json(&json!({"input": {"text": nul}}))
        .send()
        .await
        .unwrap();
    problem(start, 422).await;
    let start = app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"key": nul})).send().await.unwrap();
    assert_eq!(problem(start, 422).await["errors"][0]["path"], "key");
    let id = app.start(&wf, json!({})).await;
    let signal = app
        .post(&format!("/api/v1/instances/{id}/signal"))
        .json(&json!({"node": "hold", "payload": nul}))
        .send()
        .await
        .unwrap();
    problem(signal, 422).await;
    assert_workflow_count(&app, 1).await;
}
both_backends!(nul_characters_are_refused_not_a_5xx);

/// JSON Schema's `integer` is any number with no fractional part, so a client driven by the
/// OpenAPI document may send `7129.0`: taken as 7129 wherever an integer is read (a typed
/// body, a trigger's settings, the preview's `count`); `7129.5` is a 422 naming the field.
async fn a_whole_float_is_taken_as_an_integer_and_a_fraction_is_422_naming_the_field(app: TestApp) {
    let workflow = |timeout: Value| json!({"name": "floats", "definition": {"nodes": [{"id": "a", "type": "noop", "timeout_ms": timeout}]}});
    let created = app.post("/api/v1/workflows").json(&workflow(json!(7129.0))).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    let stored: Value = app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["draft"]["nodes"][0]["timeout_ms"], json!(7129), "stored as the integer");
    let refused = app.post("/api/v1/workflows").json(&workflow(json!(7129.5))).send().await.unwrap();
    let body = problem(refused, 422).await;
    assert_eq!(body["errors"][0]["path"], "definition.nodes[0].timeout_ms", "{body}");
    assert!(body["detail"].as_str().unwrap().contains("7129.5"), "{body}");

    let trigger = |rate: Value| json!({"kind": "webhook", "rate_limit_per_minute": rate});
    let triggers = format!("/api/v1/workflows/{id}/triggers");
    let created = app.post(&triggers).json(&trigger(json!(7129.0))).send().await.unwrap();
    assert_eq!(created.status(), 201);
    assert_eq!(created.json::<Value>().await.unwrap()["rate_limit_per_minute"], json!(7129));
    let body = problem(app.post(&triggers).json(&trigger(json!(7129.5))).send().await.unwrap(), 422).await;
    assert_eq!(body["errors"][0]["path"], "rate_limit_per_minute", "{body}");

    let preview = |count: Value| json!({"expression": "*/5 * * * *", "count": count});
    let times: Value =
        app.post("/api/v1/triggers/preview").json(&preview(json!(3.0))).send().await.unwrap().json().await.unwrap();
    assert_eq!(times["times"].as_array().unwrap().len(), 3, "{times}");
    let body =
        problem(app.post("/api/v1/triggers/preview").json(&preview(json!(2.5))).send().await.unwrap(), 422).await;
    assert_eq!(body["errors"][0]["path"], "count", "{body}");
    assert_workflow_count(&app, 1).await;
}
both_backends!(a_whole_float_is_taken_as_an_integer_and_a_fraction_is_422_naming_the_field);

/// A refusal quotes a short excerpt of what was sent, never all of it: serde quotes a wrong
/// value, or an unknown key, whole.
async fn a_refusal_quotes_only_an_excerpt_of_a_huge_value_or_key(app: TestApp) {
    let huge = "x".repeat(500_000);
    let wrong_type = json!({"name": "w", "definition": {"nodes": [{"id": "a", "type": "noop", "timeout_ms": huge}]}});
    let mut unknown_key = json!({"name": "w", "definition": chain()});
    unknown_key.as_object_mut().unwrap().insert(huge.clone(), json!(1));
    for body in [wrong_type, unknown_key] {
        let refused = problem(app.post("/api/v1/workflows").json(&body).send().await.unwrap(), 422).await;
        let detail = refused["detail"].as_str().unwrap();
        assert!(detail.len() < 1_000 && detail.contains("xxxx…(cut)"), "{} bytes: {detail}", detail.len());
        assert!(refused.to_string().len() < 2_000, "{} bytes", refused.to_string().len());
    }
    assert_workflow_count(&app, 0).await;
}
both_backends!(a_refusal_quotes_only_an_excerpt_of_a_huge_value_or_key);
