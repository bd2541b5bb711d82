//! The edge: every body is the JSON type its route documents, every error is problem+json,
//! and NUL or overlong input is refused before any handler or database sees it.

use crate::bad_input::send_while_reading;
use crate::common::{both_backends, chain, problem, Backend, TestApp};
use serde_json::{json, Value};
use trellis_model::InstanceStatus;

/// Bodies that are JSON but not an object.
const NOT_OBJECTS: [&str; 6] = ["[]", "[{}]", "\"x\"", "1", "null", "true"];

/// Every route that reads a body, with real ids where the id is looked up first.
fn body_routes(workflow: &str, instance: &str) -> Vec<(reqwest::Method, String)> {
    use reqwest::Method;
    let other = uuid::Uuid::now_v7();
    [
        (Method::POST, "/api/v1/auth/login".to_owned()),
        (Method::POST, "/api/v1/workflows".to_owned()),
        (Method::PATCH, format!("/api/v1/workflows/{workflow}")),
        (Method::PUT, format!("/api/v1/workflows/{workflow}/draft")),
        (Method::POST, format!("/api/v1/workflows/{workflow}/validate")),
        (Method::POST, format!("/api/v1/workflows/{workflow}/versions")),
        (Method::POST, format!("/api/v1/workflows/{workflow}/instances")),
        (Method::POST, format!("/api/v1/workflows/{workflow}/triggers")),
        (Method::PUT, format!("/api/v1/workflows/{workflow}/retention")),
        (Method::PUT, "/api/v1/retention".to_owned()),
        (Method::POST, "/api/v1/api-keys".to_owned()),
        (Method::POST, "/api/v1/users".to_owned()),
        (Method::POST, format!("/api/v1/instances/{instance}/retry")),
        (Method::POST, format!("/api/v1/instances/{instance}/signal")),
        (Method::POST, "/api/v1/instances/purge".to_owned()),
        (Method::POST, "/api/v1/instances/cancel".to_owned()),
        (Method::POST, "/api/v1/instances/retry".to_owned()),
        (Method::POST, "/api/v1/tasks/poll".to_owned()),
        (Method::POST, format!("/api/v1/tasks/{other}/heartbeat")),
        (Method::POST, format!("/api/v1/tasks/{other}/complete")),
        (Method::POST, format!("/api/v1/tasks/{other}/fail")),
        (Method::PATCH, format!("/api/v1/triggers/{other}")),
        (Method::POST, format!("/api/v1/triggers/{other}/rotate-secret")),
        (Method::POST, "/api/v1/triggers/preview".to_owned()),
    ]
    .into()
}

async fn an_array_or_a_scalar_body_is_refused_on_every_route_and_changes_nothing(app: TestApp) {
    let workflow = app.publish(chain()).await;
    let instance = app.start(&workflow, json!({})).await;
    app.wait_finished(&instance).await;
    let retention_before: Value = app.get("/api/v1/retention").send().await.unwrap().json().await.unwrap();
    for (method, path) in body_routes(&workflow, &instance) {
        for body in NOT_OBJECTS {
            let response = app
                .as_admin(app.client.request(method.clone(), app.url(&path)))
                .header("content-type", "application/json")
                .header("if-match", "*")
                .body(body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            assert_eq!(status, 422, "{method} {path} with {body}");
            let problem = problem(response, 422).await;
            assert!(
                problem["detail"].as_str().unwrap().contains("JSON object"),
                "{method} {path} with {body}: {problem}"
            );
        }
    }
    let current: Value = app.get(&format!("/api/v1/workflows/{workflow}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(current["draft"], chain(), "the draft is intact");
    let versions: Value =
        app.get(&format!("/api/v1/workflows/{workflow}/versions")).send().await.unwrap().json().await.unwrap();
    assert_eq!(versions["items"].as_array().map(Vec::len), Some(1), "{versions}");
    let retention_after: Value = app.get("/api/v1/retention").send().await.unwrap().json().await.unwrap();
    assert_eq!(retention_before, retention_after);
    let jobs: Value = app.get("/api/v1/jobs").send().await.unwrap().json().await.unwrap();
    assert_eq!(jobs["items"], json!([]), "no bulk job started");
    let list: Value =
        app.get(&format!("/api/v1/instances?workflow={workflow}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "no instance started");
}

async fn an_array_standing_in_for_a_nested_object_is_refused(app: TestApp) {
    let created = app.create_workflow(json!({"name": "kept", "definition": chain()})).await;
    let id = created.summary.id.as_str();
    let nested = app.post("/api/v1/workflows").json(&json!({"name": "x", "definition": []})).send().await.unwrap();
    assert!(problem(nested, 422).await["detail"].as_str().unwrap().contains("expected a JSON object"));
    for draft in [
        json!({"nodes": [[]]}),
        json!({"nodes": [], "settings": []}),
        json!({"nodes": [{"id": "a", "type": "noop", "retry": []}]}),
    ] {
        let response = app
            .put(&format!("/api/v1/workflows/{id}/draft"))
            .header("if-match", "*")
            .json(&draft)
            .send()
            .await
            .unwrap();
        problem(response, 422).await;
    }
    let current: Value = app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(current["draft"], chain());
}

async fn rejections_of_every_kind_are_problem_json(app: TestApp) {
    let workflow = app.publish(chain()).await;
    // 413 on a route that reads its (optional) body raw, and on one that reads JSON.
    let big = format!(r#"{{"input": "{}"}}"#, "x".repeat(2 * 1024 * 1024));
    for path in [format!("/api/v1/workflows/{workflow}/instances"), "/api/v1/workflows".to_owned()] {
        let (status, text) = send_while_reading(&app, "POST", &path, big.clone().into_bytes()).await;
        assert_eq!(status, 413, "{path}: {text}");
        assert!(
            text.contains("application/problem+json") && text.contains("larger than this server accepts"),
            "{path}: {text}"
        );
    }
    let malformed = app
        .post(&format!("/api/v1/workflows/{workflow}/instances"))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    problem(malformed, 400).await;
    let form = app.post("/api/v1/workflows").header("content-type", "text/plain").body("{}").send().await.unwrap();
    problem(form, 415).await;
    // A path parameter that is not UTF-8, on the webhook route outside /api/v1.
    problem(app.client.post(app.url("/hooks/%FF%FE")).body("{}").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/instances?limit=many").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/instances?since=yesterday").send().await.unwrap(), 400).await;
}

async fn a_declared_body_length_over_the_limit_is_413_without_waiting_for_the_body(app: TestApp) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /api/v1/workflows HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 99999999\r\n\r\n",
        app.addr, app.admin_token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // No body follows: a server waiting for it would never answer.
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer[..read.expect("answered without the body").unwrap()]).into_owned();
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("application/problem+json"), "{text}");
}

async fn a_nul_in_a_path_a_query_a_json_value_or_key_is_a_4xx_and_the_server_keeps_working(app: TestApp) {
    let workflow = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})).await;
    let instance = app.start(&workflow, json!({})).await;
    for path in [
        "/api/v1/workflows/a%00b".to_owned(),
        format!("/api/v1/instances/{instance}%00/cancel"),
        "/api/v1/instances/%00/cancel".to_owned(),
        "/api/v1/triggers/x%00y".to_owned(),
        "/hooks/%00".to_owned(),
        "/web%00app".to_owned(),
        format!("/api/v1/audit?actor=a%00&target={instance}"),
        "/api/v1/workflows?q=%00".to_owned(),
    ] {
        for method in [reqwest::Method::GET, reqwest::Method::POST] {
            let response = app
                .as_admin(app.client.request(method.clone(), app.url(&path)))
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            assert!((400..500).contains(&status), "{method} {path}: {status}");
            problem(response, status).await;
        }
    }
    let anonymous = app.client.post(app.url("/api/v1/instances/a%00b/cancel")).send().await.unwrap();
    problem(anonymous, 400).await;
    let nul = "x\u{0}y";
    let cases = [
        (
            format!("/api/v1/workflows/{workflow}/instances"),
            json!({"input": {"deep": [{"text": nul}]}}),
            "input.deep[0].text",
        ),
        (format!("/api/v1/workflows/{workflow}/instances"), json!({"input": {nul: 1}}), "input.x\\u0000y"),
        (format!("/api/v1/instances/{instance}/signal"), json!({"node": "hold", "payload": {"a": nul}}), "payload.a"),
        (
            "/api/v1/workflows".to_owned(),
            json!({"name": "n", "definition": {"nodes": [{"id": "a", "type": "noop", "config": {nul: 1}}]}}),
            "definition.nodes[0].config.x\\u0000y",
        ),
        (
            format!("/api/v1/workflows/{workflow}/triggers"),
            json!({"kind": "webhook", "input_mapping": nul}),
            "input_mapping",
        ),
        (
            format!("/api/v1/tasks/{}/complete", uuid::Uuid::now_v7()),
            json!({"lease_token": "t", "output": [nul]}),
            "output[0]",
        ),
        ("/api/v1/auth/login".to_owned(), json!({"username": nul, "password": "whatever-123"}), "username"),
        (
            "/api/v1/users".to_owned(),
            json!({"username": nul, "password": "password-123", "role": "viewer"}),
            "username",
        ),
    ];
    for (path, body, where_) in cases {
        let response = app.post(&path).json(&body).send().await.unwrap();
        let problem = problem(response, 422).await;
        assert_eq!(problem["errors"][0]["path"], where_, "{path}: {problem}");
        assert!(problem["detail"].as_str().unwrap().contains("NUL"), "{problem}");
    }
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
    assert_eq!(app.instance(&instance).await.summary.status, InstanceStatus::Running);
    let list: Value =
        app.get(&format!("/api/v1/instances?workflow={workflow}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "nothing started with a NUL");
    app.create_workflow(json!({"name": "still working"})).await;
}
both_backends!(
    an_array_or_a_scalar_body_is_refused_on_every_route_and_changes_nothing,
    an_array_standing_in_for_a_nested_object_is_refused,
    rejections_of_every_kind_are_problem_json,
    a_declared_body_length_over_the_limit_is_413_without_waiting_for_the_body,
    a_nul_in_a_path_a_query_a_json_value_or_key_is_a_4xx_and_the_server_keeps_working
);

/// A server with a built web app (an `index.html` in its web folder).
async fn with_web_app(backend: Backend) -> (TestApp, tempfile::TempDir) {
    let web = tempfile::tempdir().unwrap();
    std::fs::write(web.path().join("index.html"), "<!doctype html><title>app</title>").unwrap();
    let dir = web.path().to_owned();
    (TestApp::spawn_with(backend, move |serve| serve.web_dir = Some(dir)).await, web)
}

async fn overlong_paths_are_414_under_the_api_and_at_the_web_app(backend: Backend) {
    let (app, _web) = with_web_app(backend).await;
    let segment = "s".repeat(300);
    for path in [
        format!("/{segment}"),
        format!("/workflows/{segment}"),
        format!("/api/v1/workflows/{segment}"),
        format!("/api/v1/instances/{segment}/cancel"),
        format!("/hooks/{segment}"),
        format!("/{}", "a/".repeat(1_500)),
    ] {
        for method in [reqwest::Method::GET, reqwest::Method::POST] {
            let response = app.as_admin(app.client.request(method.clone(), app.url(&path))).send().await.unwrap();
            assert!(response.status().as_u16() < 500, "{method} {path}");
            problem(response, 414).await;
        }
    }
    // Ordinary web-app paths are still served, and the file server's own refusals are problems.
    let page = app.client.get(app.url("/workflows/some-id")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("<title>app</title>"));
    problem(app.client.post(app.url("/workflows/some-id")).send().await.unwrap(), 405).await;
}

mod overlong_paths {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        overlong_paths_are_414_under_the_api_and_at_the_web_app(Backend::Sqlite).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        overlong_paths_are_414_under_the_api_and_at_the_web_app(Backend::Postgres).await
    }
}
