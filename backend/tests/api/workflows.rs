use crate::common::{both_backends, chain, problem, TestApp};
use serde_json::{json, Value};

async fn a_created_workflow_can_be_read_renamed_and_archived(app: TestApp) {
    let created = app.create_workflow(json!({"name": "Orders", "description": "nightly", "definition": chain()})).await;
    let id = created.summary.id.as_str();
    assert_eq!(serde_json::to_value(&created.draft).unwrap(), chain());
    assert_eq!(created.summary.latest_version, None);

    let fetched = app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap();
    assert_eq!(fetched.headers()["etag"].to_str().unwrap(), created.etag.as_str());
    let fetched: Value = fetched.json().await.unwrap();
    assert_eq!(fetched["name"], "Orders");
    assert_eq!(fetched["description"], "nightly");

    let renamed: Value = app
        .patch(&format!("/api/v1/workflows/{id}"))
        .json(&json!({"name": "  Invoices "}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(renamed["name"], "Invoices");
    assert_eq!(renamed["description"], "nightly");

    let archived: Value =
        app.post(&format!("/api/v1/workflows/{id}/archive")).send().await.unwrap().json().await.unwrap();
    assert_eq!(archived["archived"], true);
    let listed: Value = app.get("/api/v1/workflows").send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 0, "archived workflows are hidden by default");
    let all: Value = app.get("/api/v1/workflows?archived=true").send().await.unwrap().json().await.unwrap();
    assert_eq!(all["items"][0]["id"], id);

    let save =
        app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&chain()).send().await.unwrap();
    problem(save, 409).await;
    app.post(&format!("/api/v1/workflows/{id}/unarchive")).send().await.unwrap();
    let save =
        app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&chain()).send().await.unwrap();
    assert_eq!(save.status(), 200);
}

async fn lists_are_newest_first_and_paginate_with_a_cursor(app: TestApp) {
    for i in 0..5 {
        app.create_workflow(json!({"name": format!("wf {i}")})).await;
    }
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/workflows?limit=2&cursor={c}"),
            None => "/api/v1/workflows?limit=2".to_owned(),
        };
        let page: Value = app.get(&path).send().await.unwrap().json().await.unwrap();
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        names.extend(items.iter().map(|w| w["name"].as_str().unwrap().to_owned()));
        assert!(items.iter().all(|w| w.get("draft").is_none()), "lists carry summaries only");
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(names, ["wf 4", "wf 3", "wf 2", "wf 1", "wf 0"]);
}

async fn names_with_markup_and_sql_are_stored_and_searched_literally(app: TestApp) {
    let nasty = "<script>alert(1)</script> '; DROP TABLE workflows;-- 100%_done";
    let created = app.create_workflow(json!({"name": nasty})).await;
    assert_eq!(created.summary.name, nasty);
    app.create_workflow(json!({"name": "100 percent done"})).await;

    let found: Value =
        app.get("/api/v1/workflows").query(&[("q", "100%_D")]).send().await.unwrap().json().await.unwrap();
    let names: Vec<_> = found["items"].as_array().unwrap().iter().map(|w| w["name"].clone()).collect();
    assert_eq!(names, [json!(nasty)], "% and _ match themselves, case-insensitively");
    let all: Value = app.get("/api/v1/workflows").send().await.unwrap().json().await.unwrap();
    assert_eq!(all["items"].as_array().unwrap().len(), 2, "the table is still there");
}

async fn unknown_workflows_and_versions_are_404_problems(app: TestApp) {
    let id = uuid::Uuid::now_v7();
    problem(app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap(), 404).await;
    problem(app.get(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap(), 404).await;
    problem(app.get(&format!("/api/v1/workflows/{id}/versions/1")).send().await.unwrap(), 404).await;
    problem(app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap(), 404).await;
    problem(app.get("/api/v1/no-such-thing").send().await.unwrap(), 404).await;
    let refused = app.as_admin(app.client.delete(app.url("/api/v1/workflows"))).send().await.unwrap();
    assert_eq!(refused.headers()["allow"], "GET,HEAD,POST", "a 405 says which methods the path takes");
    problem(refused, 405).await;
}

async fn health_and_readiness_probes_answer_without_credentials(app: TestApp) {
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
    let ready: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["status"], "ready");
    let request_id = app.client.get(app.url("/healthz")).send().await.unwrap().headers().get("x-request-id").cloned();
    assert!(request_id.is_some(), "every response carries a request id");
}
both_backends!(
    a_created_workflow_can_be_read_renamed_and_archived,
    lists_are_newest_first_and_paginate_with_a_cursor,
    names_with_markup_and_sql_are_stored_and_searched_literally,
    unknown_workflows_and_versions_are_404_problems,
    health_and_readiness_probes_answer_without_credentials
);
