use crate::common::{both_backends, chain, problem, TestApp};
use serde_json::{json, Value};

async fn draft_saves_need_a_current_etag(app: TestApp) {
    let created = app.create_workflow(json!({"name": "etags"})).await;
    let id = created.summary.id.as_str();
    let draft = format!("/api/v1/workflows/{id}/draft");
    let first_etag = created.etag.as_str().to_owned();

    let missing = app.put(&draft).json(&chain()).send().await.unwrap();
    problem(missing, 428).await;

    let saved = app.put(&draft).header("if-match", &first_etag).json(&chain()).send().await.unwrap();
    assert_eq!(saved.status(), 200);
    let new_etag = saved.headers()["etag"].to_str().unwrap().to_owned();
    assert_ne!(new_etag, first_etag);
    let saved: Value = saved.json().await.unwrap();
    assert_eq!(saved["draft"], chain());

    let stale = app
        .put(&draft)
        .header("if-match", &first_etag)
        .json(&json!({"nodes": [{"id": "z", "type": "noop"}]}))
        .send()
        .await
        .unwrap();
    problem(stale, 412).await;
    let nonsense = app.put(&draft).header("if-match", "\"banana\"").json(&chain()).send().await.unwrap();
    problem(nonsense, 412).await;

    let current: Value = app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(current["draft"], chain(), "a refused save changes nothing");
    assert_eq!(current["etag"], new_etag);
}

async fn of_concurrent_saves_with_one_etag_exactly_one_wins(app: TestApp) {
    let created = app.create_workflow(json!({"name": "race"})).await;
    let id = created.summary.id.as_str().to_owned();
    let etag = created.etag.as_str().to_owned();
    let saves = (0..8).map(|i| {
        let request = app
            .put(&format!("/api/v1/workflows/{id}/draft"))
            .header("if-match", &etag)
            .json(&json!({"nodes": [{"id": format!("writer{i}"), "type": "noop"}]}));
        async move { request.send().await.unwrap().status().as_u16() }
    });
    let mut statuses = futures_join_all(saves).await;
    statuses.sort();
    assert_eq!(statuses, [200, 412, 412, 412, 412, 412, 412, 412]);
}

/// Unfinished work is kept: a draft with problems is saved (200, a new ETag) and the answer lists
/// every problem; publishing it is refused with the same list, and nothing is published.
async fn a_draft_with_problems_is_kept_with_every_problem_and_publishing_it_is_refused(app: TestApp) {
    let created = app.create_workflow(json!({"name": "broken", "definition": chain()})).await;
    let id = created.summary.id.as_str();
    let bad = json!({
        "nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "noop"}, {"id": "c", "type": "http"},
                  {"id": "d", "type": "warp-drive"},
                  {"id": "t", "type": "transform", "config": {"expression": "{'tier': input.tier"}}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}, {"from": "a", "to": "ghost"}]
    });
    let response =
        app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&bad).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let etag = response.headers()["etag"].to_str().unwrap().to_owned();
    assert_ne!(etag, created.etag);
    let body: Value = response.json().await.unwrap();
    let problems = body["problems"].as_array().unwrap();
    let codes: Vec<_> = problems.iter().map(|e| e["code"].as_str().unwrap()).collect();
    for code in ["cycle", "invalid_config", "unknown_node_type", "unknown_node"] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    let cycle = problems.iter().find(|e| e["code"] == "cycle").unwrap();
    assert_eq!(cycle["cycle"], json!(["a", "b"]));
    assert_eq!(problems.iter().find(|e| e["code"] == "invalid_config").unwrap()["node"], "c");
    let syntax = problems.iter().find(|e| e["node"] == "t").unwrap();
    assert_eq!(syntax["path"], "nodes[4].config.expression");
    assert!(syntax["message"].as_str().unwrap().contains("line 1, column"), "{syntax}");

    let current: Value = app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!((&current["draft"]["nodes"], &current["draft"]["edges"]), (&bad["nodes"], &bad["edges"]));
    assert_eq!(current["etag"], etag.as_str());

    let refused = problem(app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap(), 422).await;
    assert_eq!(refused["errors"].as_array().unwrap().len(), problems.len(), "{refused}");
    let versions: Value =
        app.get(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap().json().await.unwrap();
    assert_eq!(versions["items"], json!([]));

    let not_a_definition = json!({"nodes": [{"id": "a", "type": 7}]});
    let put = app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&not_a_definition);
    problem(put.send().await.unwrap(), 422).await;
}

/// Templates and expressions with syntax errors are problems of validate, at their fields.
async fn validate_compiles_every_template_and_expression(app: TestApp) {
    let created = app.create_workflow(json!({"name": "syntax"})).await;
    let id = created.summary.id.as_str();
    let definition = json!({
        "nodes": [
            {"id": "h", "type": "http", "config": {"url": "http://127.0.0.1:9/{{ input.x"}},
            {"id": "b", "type": "branch", "config": {"condition": "input.x >"}}
        ],
        "edges": [{"from": "h", "to": "b"}]
    });
    let report: Value = app
        .post(&format!("/api/v1/workflows/{id}/validate"))
        .json(&definition)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["valid"], false, "{report}");
    let paths: Vec<&str> = report["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["nodes[0].config.url", "nodes[1].config.condition"], "{report}");
}

async fn the_validate_endpoint_reports_errors_and_warnings_without_saving(app: TestApp) {
    let created = app.create_workflow(json!({"name": "check"})).await;
    let id = created.summary.id.as_str();
    let definition = json!({
        "nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "delay"}, {"id": "lonely", "type": "noop"}],
        "edges": [{"from": "a", "to": "b"}]
    });
    let report: Value = app
        .post(&format!("/api/v1/workflows/{id}/validate"))
        .json(&definition)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"][0]["node"], "b");
    assert_eq!(report["warnings"][0]["code"], "disconnected");
    assert_eq!(report["warnings"][0]["node"], "lonely");
}

async fn publishing_freezes_numbered_versions(app: TestApp) {
    let created = app.create_workflow(json!({"name": "versions"})).await;
    let id = created.summary.id.as_str();
    let publish = || app.post(&format!("/api/v1/workflows/{id}/versions"));

    let empty = problem(publish().send().await.unwrap(), 422).await;
    assert_eq!(empty["errors"][0]["code"], "empty_graph");

    app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&chain()).send().await.unwrap();
    let first = publish().json(&json!({"note": "first"})).send().await.unwrap();
    assert_eq!(first.status(), 201);
    assert_eq!(first.json::<Value>().await.unwrap()["version"], 1);

    let changed = json!({"nodes": [{"id": "only", "type": "noop"}]});
    app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&changed).send().await.unwrap();
    let second: Value = publish().send().await.unwrap().json().await.unwrap();
    assert_eq!(second["version"], 2);

    let v1: Value = app.get(&format!("/api/v1/workflows/{id}/versions/1")).send().await.unwrap().json().await.unwrap();
    assert_eq!(v1["definition"], chain(), "version 1 is frozen");
    assert_eq!(v1["note"], "first");
    assert_eq!(v1["published_by"], "admin");
    let list: Value = app.get(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap().json().await.unwrap();
    let numbers: Vec<_> = list["items"].as_array().unwrap().iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert_eq!(numbers, [2, 1]);
    let workflow: Value = app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(workflow["latest_version"], 2);
    problem(app.get(&format!("/api/v1/workflows/{id}/versions/3")).send().await.unwrap(), 404).await;
}

async fn concurrent_publishes_get_distinct_consecutive_versions(app: TestApp) {
    let created = app.create_workflow(json!({"name": "many", "definition": chain()})).await;
    let id = created.summary.id.as_str().to_owned();
    let publishes = (0..6).map(|_| {
        let request = app.post(&format!("/api/v1/workflows/{id}/versions"));
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 201);
            response.json::<Value>().await.unwrap()["version"].as_i64().unwrap()
        }
    });
    let mut versions = futures_join_all(publishes).await;
    versions.sort();
    assert_eq!(versions, [1, 2, 3, 4, 5, 6]);
}
both_backends!(
    draft_saves_need_a_current_etag,
    of_concurrent_saves_with_one_etag_exactly_one_wins,
    a_draft_with_problems_is_kept_with_every_problem_and_publishing_it_is_refused,
    validate_compiles_every_template_and_expression,
    the_validate_endpoint_reports_errors_and_warnings_without_saving,
    publishing_freezes_numbered_versions,
    concurrent_publishes_get_distinct_consecutive_versions
);

/// Runs futures concurrently on the test runtime and collects their outputs in order.
pub async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}
