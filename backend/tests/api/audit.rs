//! The audit log: every change through `/api/v1` is recorded with who, what, which
//! resource, when and how it ended; only admins read it.

use crate::common::{both_backends, problem, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The audit entries matching `query`, once `ready` holds for them: rows are written by a
/// background writer just after each answer, so a test waits briefly for them.
async fn audit_until(app: &TestApp, query: &str, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..500 {
        let page: Value =
            app.get(&format!("/api/v1/audit?limit=500&{query}")).send().await.unwrap().json().await.unwrap();
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if ready(&items) {
            return items;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the audit log never showed what was expected for `{query}`");
}

fn find<'a>(items: &'a [Value], action: &str, actor: &str) -> Option<&'a Value> {
    items.iter().find(|e| e["action"] == action && e["actor"]["name"] == actor)
}

async fn id_of(app: &TestApp, token: &str) -> String {
    let me: Value =
        app.client.get(app.url("/api/v1/auth/me")).bearer_auth(token).send().await.unwrap().json().await.unwrap();
    me["id"].as_str().unwrap().to_owned()
}

async fn changes_by_editors_operators_and_admins_are_recorded_with_who_what_target_and_result(app: TestApp) {
    let editor = app.token_for("editor").await;
    let operator = app.token_for("operator").await;
    let post = |path: &str, token: &str| app.client.post(app.url(path)).bearer_auth(token.to_owned());

    let definition = json!({"nodes": [{"id": "wait", "type": "delay", "config": {"duration_ms": 600000}}]});
    let created = post("/api/v1/workflows", &editor)
        .json(&json!({"name": "audited", "definition": definition}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let workflow = created.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    assert_eq!(post(&format!("/api/v1/workflows/{workflow}/versions"), &editor).send().await.unwrap().status(), 201);
    let started =
        post(&format!("/api/v1/workflows/{workflow}/instances"), &operator).json(&json!({})).send().await.unwrap();
    assert_eq!(started.status(), StatusCode::CREATED);
    let instance = started.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    assert_eq!(post(&format!("/api/v1/instances/{instance}/cancel"), &operator).send().await.unwrap().status(), 200);

    let items =
        audit_until(&app, "", |items| find(items, "POST /api/v1/instances/{id}/cancel", "operator-user").is_some())
            .await;
    let editor_id = id_of(&app, &editor).await;
    let expected = [
        ("POST /api/v1/workflows", "editor-user", "editor", workflow.as_str(), 201),
        ("POST /api/v1/workflows/{id}/versions", "editor-user", "editor", workflow.as_str(), 201),
        ("POST /api/v1/workflows/{id}/instances", "operator-user", "operator", workflow.as_str(), 201),
        ("POST /api/v1/instances/{id}/cancel", "operator-user", "operator", instance.as_str(), 200),
        ("POST /api/v1/users", "admin", "admin", editor_id.as_str(), 201),
    ];
    for (action, actor, role, target, status) in expected {
        let entry = items
            .iter()
            .find(|e| e["action"] == action && e["actor"]["name"] == actor && e["target"] == target)
            .unwrap_or_else(|| panic!("no `{action}` by {actor} on {target} in {items:?}"));
        assert_eq!(entry["actor"]["role"], role, "{entry}");
        assert!(entry["actor"]["id"].is_string(), "{entry}");
        assert_eq!(entry["status"], status, "{entry}");
        assert!(entry["detail"].is_null(), "successes carry no detail: {entry}");
        assert!(entry["at"].as_str().unwrap().contains('T'), "{entry}");
    }
    // Newest first.
    let position = |action: &str| items.iter().position(|e| e["action"] == action).unwrap();
    assert!(position("POST /api/v1/instances/{id}/cancel") < position("POST /api/v1/workflows"));
    // Reads are not audited.
    assert!(items.iter().all(|e| !e["action"].as_str().unwrap().starts_with("GET ")));
}

async fn refused_and_invalid_changes_are_recorded_with_their_status_and_detail(app: TestApp) {
    let viewer = app.token_for("viewer").await;
    let editor = app.token_for("editor").await;
    let forbidden = app
        .client
        .post(app.url("/api/v1/workflows"))
        .bearer_auth(&viewer)
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    problem(forbidden, 403).await;
    let invalid = app
        .client
        .post(app.url("/api/v1/workflows"))
        .bearer_auth(&editor)
        .json(&json!({"name": "  "}))
        .send()
        .await
        .unwrap();
    problem(invalid, 422).await;
    // Webhook deliveries have their own log and are not audited twice.
    let hook = app.client.post(app.url(&format!("/hooks/{}", uuid::Uuid::now_v7()))).body("{}").send().await.unwrap();
    assert_eq!(hook.status(), 404);
    let anonymous = app.client.post(app.url("/api/v1/workflows")).json(&json!({"name": "x"})).send().await.unwrap();
    problem(anonymous, 401).await;

    let items = audit_until(&app, "action=POST%20/api/v1/workflows", |items| items.len() >= 3).await;
    let refused = find(&items, "POST /api/v1/workflows", "viewer-user").expect("the 403 is recorded");
    assert_eq!(refused["status"], 403);
    assert_eq!(refused["actor"]["role"], "viewer");
    assert!(refused["detail"].as_str().unwrap().contains("editor role"), "{refused}");
    let rejected = find(&items, "POST /api/v1/workflows", "editor-user").expect("the 422 is recorded");
    assert_eq!(rejected["status"], 422);
    assert!(rejected["detail"].as_str().unwrap().contains("name"), "{rejected}");
    let stranger = find(&items, "POST /api/v1/workflows", "anonymous").expect("the 401 is recorded");
    assert_eq!(stranger["status"], 401);
    assert!(stranger["actor"]["id"].is_null() && stranger["actor"]["role"].is_null(), "{stranger}");
    // Rows are queued in order: the delivery, sent before the 401 above, would be there by now.
    let hooks: Value = app.get("/api/v1/audit?action=hooks").send().await.unwrap().json().await.unwrap();
    assert_eq!(hooks["items"], json!([]));
}

async fn sign_ins_are_recorded_with_the_username_tried_but_never_the_password(app: TestApp) {
    let secret = "not-the-password-but-secret-4711";
    let failed = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": secret}))
        .send()
        .await
        .unwrap();
    problem(failed, 401).await;
    let unknown = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": "nobody-here", "password": secret}))
        .send()
        .await
        .unwrap();
    problem(unknown, 401).await;

    let items =
        audit_until(&app, "action=auth/login", |items| items.iter().filter(|e| e["status"] == 401).count() >= 2).await;
    let wrong = items.iter().find(|e| e["status"] == 401 && e["actor"]["name"] == "admin").expect("the failed sign-in");
    assert_eq!(wrong["action"], "POST /api/v1/auth/login");
    assert_eq!(wrong["detail"], "wrong username or password");
    assert!(wrong["actor"]["id"].is_null(), "a failed sign-in proves nobody: {wrong}");
    assert!(items.iter().any(|e| e["status"] == 401 && e["actor"]["name"] == "nobody-here"));
    let succeeded =
        items.iter().find(|e| e["status"] == 200 && e["actor"]["name"] == "admin").expect("the test's own sign-in");
    assert_eq!(succeeded["actor"]["role"], "admin");

    let everything = app.get("/api/v1/audit?limit=500").send().await.unwrap().text().await.unwrap();
    assert!(!everything.contains(secret), "a password reached the audit log");
    assert!(!everything.contains(crate::common::ADMIN_PASSWORD), "a password reached the audit log");
}

async fn worker_polls_and_heartbeats_are_not_recorded_but_what_they_do_to_instances_is(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "work", "type": "task", "config": {"queue": "audited"}}]})).await;
    app.start(&wf, json!({})).await;
    let task: Value = app
        .post("/api/v1/tasks/poll")
        .json(&json!({"queue": "audited", "worker": "w1", "wait_ms": 5000}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task_id = task["id"].as_str().unwrap();
    let beat = app
        .post(&format!("/api/v1/tasks/{task_id}/heartbeat"))
        .json(&json!({"lease_token": task["lease_token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(beat.status(), 200);
    let forged = app
        .post(&format!("/api/v1/tasks/{task_id}/heartbeat"))
        .json(&json!({"lease_token": "forged"}))
        .send()
        .await
        .unwrap();
    problem(forged, 409).await;
    let done = app
        .post(&format!("/api/v1/tasks/{task_id}/complete"))
        .json(&json!({"lease_token": task["lease_token"], "output": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 204);
    let rows = audit_until(&app, "action=tasks", |rows| {
        rows.iter().any(|r| r["action"].as_str().unwrap().ends_with("/complete"))
    })
    .await;
    let actions: Vec<(&str, i64)> =
        rows.iter().map(|r| (r["action"].as_str().unwrap(), r["status"].as_i64().unwrap())).collect();
    assert_eq!(
        actions,
        [("POST /api/v1/tasks/{id}/complete", 204), ("POST /api/v1/tasks/{id}/heartbeat", 409)],
        "{rows:?}"
    );
}

async fn only_admins_read_the_audit_log_and_it_filters_and_pages(app: TestApp) {
    let viewer = app.token_for("viewer").await;
    let operator = app.token_for("operator").await;
    problem(app.client.get(app.url("/api/v1/audit")).bearer_auth(&viewer).send().await.unwrap(), 403).await;
    problem(app.client.get(app.url("/api/v1/audit")).bearer_auth(&operator).send().await.unwrap(), 403).await;
    problem(app.client.get(app.url("/api/v1/audit")).send().await.unwrap(), 401).await;
    problem(app.get("/api/v1/audit?limit=0").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/audit?cursor=nope").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/audit?since=yesterday").send().await.unwrap(), 400).await;

    // Sign-ins of admin, viewer-user and operator-user, and two user creations.
    let all = audit_until(&app, "", |items| items.len() >= 5).await;
    let mine = audit_until(&app, "actor=viewer-user", |items| !items.is_empty()).await;
    assert!(mine.iter().all(|e| e["actor"]["name"] == "viewer-user"), "{mine:?}");
    let users = audit_until(&app, "action=/users", |items| items.len() == 2).await;
    let target = users[0]["target"].as_str().unwrap();
    let by_target = audit_until(&app, &format!("target={target}"), |items| !items.is_empty()).await;
    assert_eq!(by_target.len(), 1);
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339().replace('+', "%2B");
    let none: Value = app.get(&format!("/api/v1/audit?since={future}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(none["items"], json!([]));

    let first: Value = app.get("/api/v1/audit?limit=2").send().await.unwrap().json().await.unwrap();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let cursor = first["next_cursor"].as_str().expect("more pages");
    let second: Value =
        app.get(&format!("/api/v1/audit?limit=2&cursor={cursor}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(second["items"][0]["id"], all[2]["id"]);
}
async fn previews_and_checks_are_not_recorded_unless_refused(app: TestApp) {
    let cron = |expression: &str| json!({"expression": expression, "timezone": "UTC"});
    // The designer's cron field asks at every keystroke: none of these is a change.
    for typed in ["0", "0 9", "0 9 * * 1-5"] {
        app.post("/api/v1/triggers/preview").json(&cron(typed)).send().await.unwrap();
    }
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let checked =
        app.post(&format!("/api/v1/workflows/{wf}/validate")).json(&json!({"nodes": []})).send().await.unwrap();
    assert!(checked.status().is_success(), "{}", checked.status());
    // A marker after them: once it is in the log, everything before it was written.
    app.post(&format!("/api/v1/workflows/{wf}/archive")).send().await.unwrap();
    let rows =
        audit_until(&app, "", |rows| rows.iter().any(|r| r["action"].as_str().unwrap().ends_with("/archive"))).await;
    let recorded: Vec<(&str, i64)> =
        rows.iter().map(|r| (r["action"].as_str().unwrap(), r["status"].as_i64().unwrap())).collect();
    let previews: Vec<_> =
        recorded.iter().filter(|(a, _)| a.ends_with("/preview") || a.ends_with("/validate")).collect();
    // "0" and "0 9" are refused (422) and so recorded; the good expression and the check are not.
    assert!(previews.iter().all(|(_, status)| *status >= 400), "{recorded:?}");
    assert!(!previews.is_empty(), "a refused preview is still recorded: {recorded:?}");
}

both_backends!(
    previews_and_checks_are_not_recorded_unless_refused,
    changes_by_editors_operators_and_admins_are_recorded_with_who_what_target_and_result,
    refused_and_invalid_changes_are_recorded_with_their_status_and_detail,
    sign_ins_are_recorded_with_the_username_tried_but_never_the_password,
    worker_polls_and_heartbeats_are_not_recorded_but_what_they_do_to_instances_is,
    only_admins_read_the_audit_log_and_it_filters_and_pages
);

async fn an_anonymous_nul_in_a_path_cannot_erase_other_callers_rows(app: TestApp) {
    // All within one batch of the writer (it gathers rows for a moment before inserting).
    let first = app.create_workflow(json!({"name": "before"})).await;
    for _ in 0..5 {
        let response = app.client.post(app.url("/api/v1/instances/a%00b/cancel")).send().await.unwrap();
        assert!(response.status().as_u16() < 500);
        let response = app
            .client
            .post(app.url("/api/v1/auth/login"))
            .json(&json!({"username": "x\u{0}", "password": "p"}))
            .send()
            .await
            .unwrap();
        assert!(response.status().as_u16() < 500);
    }
    let second = app.create_workflow(json!({"name": "after"})).await;
    let items = audit_until(&app, "action=POST%20/api/v1/workflows", |items| items.len() >= 2).await;
    for created in [&first, &second] {
        let id = created.summary.id.as_str();
        assert!(items.iter().any(|e| e["target"] == id), "the create of {id} was lost: {items:?}");
    }
}

async fn the_audit_writer_loses_only_the_row_the_database_refuses(app: TestApp) {
    use trellis::store::{AuditQuery, AuditRow};
    let store = app.store().await;
    let row = |action: &str, target: &str| AuditRow {
        id: uuid::Uuid::now_v7(),
        at: chrono::Utc::now(),
        actor_id: None,
        actor_name: "anonymous".into(),
        actor_role: None,
        action: action.into(),
        target: Some(target.into()),
        status: 401,
        detail: Some(format!("detail of {target}")),
        request_id: None,
    };
    let existing = row("POST /existing", "existing");
    store.insert_audit(std::slice::from_ref(&existing)).await.unwrap();
    let mut duplicate = row("POST /duplicate", "duplicate");
    duplicate.id = existing.id;
    let mut nul = row("POST /nul\u{0}", "a\u{0}b");
    nul.actor_name = format!("{}\u{0}", "n".repeat(5_000));
    let batch = [row("POST /first", "first"), duplicate, nul, row("POST /last", "last")];

    let (log, writer) = trellis::audit::AuditLog::start(store.clone());
    for r in batch {
        log.record(r);
    }
    drop(log);
    writer.await.unwrap();

    let rows = store.list_audit(&AuditQuery { limit: 100, ..Default::default() }).await.unwrap();
    let targets: Vec<&str> = rows.iter().filter_map(|r| r.target.as_deref()).collect();
    assert_eq!(targets, ["last", "first", "a\u{FFFD}b", "existing"], "only the duplicate is lost: {rows:?}");
    let cleaned = rows.iter().find(|r| r.action.starts_with("POST /nul")).unwrap();
    assert_eq!(cleaned.action, "POST /nul\u{FFFD}");
    assert_eq!(cleaned.actor_name.chars().count(), 200, "caller text is bounded");
    assert_eq!(rows.iter().find(|r| r.id == existing.id).unwrap().action, "POST /existing");
}
both_backends!(
    an_anonymous_nul_in_a_path_cannot_erase_other_callers_rows,
    the_audit_writer_loses_only_the_row_the_database_refuses
);
