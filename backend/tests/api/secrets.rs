//! Secrets: a token put into Trellis reaches the call that needs it and nothing else — no API
//! answer, log line or byte of the database; roles, bad input, rotation, restarts and the
//! master key. Starting with a key, restarts and rotating it: `secret_keys.rs`.

use crate::common::{both_backends, node, problem, TestApp};
use crate::ledger;
use crate::sse::SseStream;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine as _;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock};
use trellis_model::InstanceStatus;

/// With `+`, `/` and `=`, so its base64 and URL-encoded forms differ from it.
const TOKEN: &str = "Zq8-s3cr3t+T0KEN/val=";

/// Every form of `TOKEN` that must appear nowhere.
fn forbidden() -> Vec<String> {
    vec![
        TOKEN.to_owned(),
        STANDARD.encode(TOKEN),
        URL_SAFE.encode(TOKEN),
        "Zq8-s3cr3t%2BT0KEN%2Fval%3D".to_owned(),
        "Zq8-s3cr3t%2BT0KEN/val%3D".to_owned(),
    ]
}

fn assert_clean(what: &str, text: &str) {
    for form in forbidden() {
        assert!(!text.contains(&form), "{what} contains the secret as `{form}`:\n{text}");
    }
}

pub(crate) async fn create_secret(app: &TestApp, name: &str, value: &str) -> Value {
    let created = app.post("/api/v1/secrets").json(&json!({"name": name, "value": value})).send().await.unwrap();
    assert_eq!(created.status(), 201, "create secret {name}");
    created.json().await.unwrap()
}

/// Everything the server logs from now on (debug and up), in one buffer for the process.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("debug,sqlx=info"))
            .with_writer(move || LogWriter(writer.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("no other test installs a subscriber");
        buffer
    })
    .clone()
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An `http` node sending the token to `addr` (which echoes it back), a transform echoing it
/// plainly and URL-encoded, and a fail node putting it in its error.
fn leaky_workflow(addr: std::net::SocketAddr) -> Value {
    json!({
        "nodes": [
            {"id": "call", "type": "http", "config": {"method": "POST", "url": format!("http://{addr}/echo"),
                "headers": {"Authorization": "Bearer {{ secret.TOKEN }}"}, "body": {"n": 1}}},
            {"id": "echo", "type": "transform",
             "config": {"expression": "{'plain': secret.TOKEN, 'url': secret.TOKEN | urlencode}"}},
            {"id": "boom", "type": "fail", "config": {"message": "{{ secret.TOKEN }} leaked"}}
        ],
        "edges": [{"from": "call", "to": "echo"}, {"from": "echo", "to": "boom"}]
    })
}

async fn a_token_reaches_the_call_that_needs_it_and_nowhere_else(app: TestApp) {
    let logs = captured_logs();
    let (addr, ledger) = ledger::start().await;
    create_secret(&app, "TOKEN", TOKEN).await;
    let workflow = app.publish(leaky_workflow(addr)).await;
    let id = app.start(&workflow, json!({"input": {}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed, "{done:?}");

    let calls = ledger.calls.lock().unwrap().clone();
    assert_eq!(calls[0].authorization.as_deref(), Some(format!("Bearer {TOKEN}").as_str()), "the call got it");
    let call = node(&done, "call").output.clone().unwrap();
    assert_eq!(call["body"]["authorization"], "Bearer [secret:TOKEN]");
    let echo = node(&done, "echo").output.clone().unwrap();
    assert_eq!(echo, json!({"plain": "[secret:TOKEN]", "url": "[secret:TOKEN]"}));
    assert_eq!(node(&done, "boom").error.as_deref(), Some("[secret:TOKEN] leaked"));

    wait_for_audit(&app, "/secrets").await;
    let answers = [
        format!("/api/v1/instances/{id}"),
        format!("/api/v1/instances/{id}/history"),
        "/api/v1/instances".to_owned(),
        "/api/v1/failures".to_owned(),
        "/api/v1/audit".to_owned(),
        "/api/v1/secrets".to_owned(),
        format!("/api/v1/workflows/{workflow}"),
        format!("/api/v1/workflows/{workflow}/versions/1"),
    ];
    for path in answers {
        let answer = app.get(&path).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        assert_clean(&path, &answer.text().await.unwrap());
    }
    let failures = app.get("/api/v1/failures").send().await.unwrap().text().await.unwrap();
    assert!(failures.contains("[secret:TOKEN] leaked"), "{failures}");
    let stream = app.get(&format!("/api/v1/instances/{id}/events")).send().await.unwrap();
    let events = SseStream::new(stream).rest().await;
    assert!(!events.is_empty());
    assert_clean(
        "the event stream",
        &serde_json::to_string(&events.iter().map(|e| &e.data).collect::<Vec<_>>()).unwrap(),
    );
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logged.contains("/api/v1/instances"), "the server's request logs are captured:\n{logged}");
    assert_clean("the log", &logged);
    assert_clean("the database", &database_text(&app).await);
}

/// Polls the audit log until a change to `route` is in it (rows are written in batches).
async fn wait_for_audit(app: &TestApp, route: &str) {
    for _ in 0..100 {
        let audit: Value = app.get("/api/v1/audit").send().await.unwrap().json().await.unwrap();
        if audit["items"].as_array().unwrap().iter().any(|row| row.to_string().contains(route)) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no audit row for {route}");
}

/// Every byte of the database as text: the SQLite files (WAL included), or every Postgres
/// table dumped row by row.
async fn database_text(app: &TestApp) -> String {
    if let Some(path) = app.database_url.strip_prefix("sqlite://") {
        let mut bytes = Vec::new();
        for suffix in ["", "-wal", "-shm"] {
            if let Ok(file) = std::fs::read(format!("{path}{suffix}")) {
                bytes.extend(file);
            }
        }
        assert!(bytes.len() > 4096, "the database files were read");
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&app.database_url).await.unwrap();
    let tables: Vec<(String,)> = sqlx::query_as("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert!(tables.iter().any(|(t,)| t == "secrets"), "{tables:?}");
    let mut text = String::new();
    for (table,) in tables {
        let sql = format!("SELECT COALESCE(string_agg(t::text, E'\\n'), '') FROM \"{table}\" t");
        let (rows,): (String,) = sqlx::query_as(&sql).fetch_one(&mut conn).await.unwrap();
        text.push_str(&rows);
    }
    assert!(text.contains("secret.TOKEN"), "the definitions keep the reference");
    text
}

async fn a_rotated_value_is_used_by_the_next_run_and_a_deleted_one_fails_the_node_naming_it(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    create_secret(&app, "API_KEY", "first-value-1").await;
    let workflow = app
        .publish(json!({"nodes": [{"id": "call", "type": "http", "config": {"url": format!("http://{addr}/x"),
            "headers": {"Authorization": "{{ secret.API_KEY }}"}}}]}))
        .await;
    let first = app.start(&workflow, json!({"input": {}})).await;
    assert_eq!(app.wait_finished(&first).await.summary.status, InstanceStatus::Succeeded);
    let rotated = app.put("/api/v1/secrets/API_KEY").json(&json!({"value": "second-value-2"})).send().await.unwrap();
    assert_eq!(rotated.status(), 200);
    let rotated: Value = rotated.json().await.unwrap();
    assert_eq!(rotated["used_by"], json!([{"id": workflow, "name": rotated["used_by"][0]["name"]}]));
    assert!(rotated.get("value").is_none(), "{rotated}");
    let second = app.start(&workflow, json!({"input": {}})).await;
    assert_eq!(app.wait_finished(&second).await.summary.status, InstanceStatus::Succeeded);
    let sent: Vec<_> = ledger.calls.lock().unwrap().iter().map(|c| c.authorization.clone().unwrap()).collect();
    assert_eq!(sent, ["first-value-1", "second-value-2"], "no republish needed");

    let deleted = app.as_admin(app.client.delete(app.url("/api/v1/secrets/API_KEY"))).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let third = app.start(&workflow, json!({"input": {}})).await;
    let failed = app.wait_finished(&third).await;
    assert_eq!(failed.summary.status, InstanceStatus::Failed);
    let error = node(&failed, "call").error.clone().unwrap();
    assert!(error.contains("the secret `API_KEY` does not exist"), "{error}");
    assert_eq!(ledger.calls.lock().unwrap().len(), 2, "no call without its secret");
    problem(app.as_admin(app.client.delete(app.url("/api/v1/secrets/API_KEY"))).send().await.unwrap(), 404).await;
}

async fn only_admins_manage_secrets_and_editors_list_their_names(app: TestApp) {
    create_secret(&app, "SHARED", "a-value-of-some-length").await;
    let editor = app.token_for("editor").await;
    let listed = app.client.get(app.url("/api/v1/secrets")).bearer_auth(&editor).send().await.unwrap();
    assert_eq!(listed.status(), 200);
    let listed: Value = listed.json().await.unwrap();
    let item = &listed["items"][0];
    assert_eq!(item["name"], "SHARED");
    let mut keys: Vec<&String> = item.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["created_at", "description", "name", "updated_at", "used_by"]);
    let create = json!({"name": "MINE", "value": "x"});
    let posted = app.client.post(app.url("/api/v1/secrets")).bearer_auth(&editor).json(&create).send().await.unwrap();
    problem(posted, 403).await;
    let put = app.client.put(app.url("/api/v1/secrets/SHARED")).bearer_auth(&editor).json(&json!({"value": "y"}));
    problem(put.send().await.unwrap(), 403).await;
    problem(app.client.delete(app.url("/api/v1/secrets/SHARED")).bearer_auth(&editor).send().await.unwrap(), 403).await;
    for role in ["viewer", "operator"] {
        let token = app.token_for(role).await;
        problem(app.client.get(app.url("/api/v1/secrets")).bearer_auth(&token).send().await.unwrap(), 403).await;
    }
}

async fn bad_secret_input_is_refused_saying_what_to_fix(app: TestApp) {
    create_secret(&app, "TAKEN", "value").await;
    let post = |body: Value| app.post("/api/v1/secrets").json(&body).send();
    let duplicate = problem(post(json!({"name": "TAKEN", "value": "v"})).await.unwrap(), 409).await;
    assert!(duplicate["detail"].as_str().unwrap().contains("`TAKEN` exists"), "{duplicate}");
    for name in ["1ABC", "has-dash", "", "é", &"A".repeat(65)] {
        let refused = problem(post(json!({"name": name, "value": "v"})).await.unwrap(), 422).await;
        assert_eq!(refused["errors"][0]["path"], "name", "{name}: {refused}");
    }
    let empty = problem(post(json!({"name": "EMPTY", "value": ""})).await.unwrap(), 422).await;
    assert_eq!(empty["errors"][0]["path"], "value");
    let big = "x".repeat(64 * 1024 + 1);
    let too_big = problem(post(json!({"name": "BIG", "value": big})).await.unwrap(), 413).await;
    assert!(too_big["detail"].as_str().unwrap().contains("at most 65536 bytes"), "{too_big}");
    post(json!({"name": "EXACT", "value": "x".repeat(64 * 1024)})).await.map(|r| assert_eq!(r.status(), 201)).unwrap();
    let rotate_big = app.put("/api/v1/secrets/TAKEN").json(&json!({"value": "x".repeat(64 * 1024 + 1)}));
    problem(rotate_big.send().await.unwrap(), 413).await;
    problem(app.put("/api/v1/secrets/TAKEN").json(&json!({})).send().await.unwrap(), 422).await;
    problem(app.put("/api/v1/secrets/NOPE").json(&json!({"value": "v"})).send().await.unwrap(), 404).await;
    problem(post(json!({"name": "X", "value": "v", "extra": 1})).await.unwrap(), 422).await;
    let listed: Value = app.get("/api/v1/secrets").send().await.unwrap().json().await.unwrap();
    let names: Vec<&str> = listed["items"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["EXACT", "TAKEN"]);
}

async fn a_reference_to_an_unknown_secret_is_refused_naming_it(app: TestApp) {
    create_secret(&app, "KNOWN", "value").await;
    let definition = |name: &str| {
        json!({"nodes": [{"id": "call", "type": "http", "config": {"url": "http://127.0.0.1:9/",
            "headers": {"X-Key": format!("{{{{ secret.{name} }}}}")}}}]})
    };
    // Kept as a draft (work is never lost), with the problem named; publishing it is refused.
    let created = app.post("/api/v1/workflows").json(&json!({"name": "typo", "definition": definition("KNWON")}));
    let kept: Value = created.send().await.unwrap().json().await.unwrap();
    let issue = &kept["problems"][0];
    assert_eq!(issue["code"], "unknown_secret", "{kept}");
    assert!(issue["message"].as_str().unwrap().contains("`KNWON`"), "{kept}");
    // At the field that holds the name, so the designer's Problems entry opens that field.
    assert_eq!(issue["path"], "nodes[0].config.headers.X-Key", "{kept}");
    let publish = app.post(&format!("/api/v1/workflows/{}/versions", kept["id"].as_str().unwrap()));
    let refused = problem(publish.send().await.unwrap(), 422).await;
    assert_eq!(refused["errors"][0]["code"], "unknown_secret", "{refused}");
    let dynamic = json!({"nodes": [{"id": "t", "type": "transform", "config": {"expression": "secret[input.k]"}}]});
    let created = app.post("/api/v1/workflows").json(&json!({"name": "d", "definition": dynamic}));
    let kept: Value = created.send().await.unwrap().json().await.unwrap();
    assert_eq!(kept["problems"][0]["code"], "secret_reference", "{kept}");

    let workflow = app.create_workflow(json!({"name": "ok", "definition": definition("KNOWN")})).await;
    let listed: Value = app.get("/api/v1/secrets").send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"][0]["used_by"], json!([{"id": workflow.summary.id, "name": "ok"}]));
    app.as_admin(app.client.delete(app.url("/api/v1/secrets/KNOWN"))).send().await.unwrap();
    let validated = app
        .post(&format!("/api/v1/workflows/{}/validate", workflow.summary.id))
        .json(&definition("KNOWN"))
        .send()
        .await
        .unwrap();
    let report: Value = validated.json().await.unwrap();
    assert_eq!(report["valid"], false, "{report}");
    let publish =
        app.post(&format!("/api/v1/workflows/{}/versions", workflow.summary.id)).json(&json!({})).send().await.unwrap();
    let refused = problem(publish, 422).await;
    assert!(refused.to_string().contains("no secret named `KNOWN`"), "{refused}");
}

both_backends!(
    a_token_reaches_the_call_that_needs_it_and_nowhere_else,
    a_rotated_value_is_used_by_the_next_run_and_a_deleted_one_fails_the_node_naming_it,
    only_admins_manage_secrets_and_editors_list_their_names,
    bad_secret_input_is_refused_saying_what_to_fix,
    a_reference_to_an_unknown_secret_is_refused_naming_it,
);
