//! The OpenAPI document says what the server answers: real requests to every operation (and
//! to the error answers that are practical to provoke), each answer checked against the
//! document: its status is documented (or covered by `default`), its media type is the
//! documented one, and its body is valid against the documented schema, formats included.

use crate::common::{chain, Backend, TestApp};
use crate::openapi_rules::{operations, within};
use reqwest::{Method, RequestBuilder};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Sends requests and checks each answer against the document.
struct Checked<'a> {
    app: &'a TestApp,
    doc: Value,
    /// (operationId, status) of every answer checked.
    seen: BTreeSet<(String, String)>,
}

impl<'a> Checked<'a> {
    fn new(app: &'a TestApp) -> Self {
        Checked { app, doc: trellis::http::openapi::build(), seen: BTreeSet::new() }
    }

    /// `METHOD template` with the template's `{…}` filled by `path`, as admin with `body`.
    async fn send(&mut self, method: &str, template: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let request = self
            .app
            .as_admin(self.app.client.request(Method::from_bytes(method.as_bytes()).unwrap(), self.app.url(path)));
        let request = match body {
            Some(body) => request.json(&body),
            None => request,
        };
        self.check(method, template, request).await
    }

    async fn check(&mut self, method: &str, template: &str, request: RequestBuilder) -> (u16, Value) {
        let what = format!("{method} {template}");
        let operation = self.doc["paths"][template][method.to_lowercase()].clone();
        assert!(operation.is_object(), "{what} is not in the document");
        let response = request.send().await.unwrap();
        let status = response.status().as_u16().to_string();
        let media = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
        let documented = match operation["responses"].get(&status) {
            Some(documented) => documented.clone(),
            None => operation["responses"]["default"].clone(),
        };
        assert!(documented.is_object(), "{what} answered {status}, which is not documented");
        self.seen.insert((operation["operationId"].as_str().unwrap().to_owned(), status.clone()));
        let content = documented["content"].as_object().cloned().unwrap_or_default();
        let Some(media) = media.map(|m| m.split(';').next().unwrap().trim().to_owned()) else {
            assert!(content.is_empty(), "{what} {status}: no body, but the document names one");
            return (status.parse().unwrap(), Value::Null);
        };
        let schema = content.get(&media).map(|c| c["schema"].clone());
        let schema = schema.unwrap_or_else(|| panic!("{what} {status}: answered {media}, documented {content:?}"));
        if media == "text/event-stream" {
            return (status.parse().unwrap(), Value::Null);
        }
        let text = response.text().await.unwrap();
        // JSON lines (`x-ndjson`) are text: several documents, not one.
        let body: Value = match media.ends_with("json") && !media.ends_with("ndjson") {
            true => serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what} {status}: not JSON ({e}): {text}")),
            false => Value::String(text),
        };
        let validator = jsonschema::options().should_validate_formats(true).build(&within(&self.doc, &schema)).unwrap();
        let errors: Vec<String> = validator.iter_errors(&body).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{what} {status}: the body breaks its schema:\n{}\n{body}", errors.join("\n"));
        (status.parse().unwrap(), body)
    }

    /// Operations the document lists that no checked answer came from.
    fn unreached(&self) -> Vec<String> {
        let reached: BTreeSet<&str> = self.seen.iter().map(|(id, _)| id.as_str()).collect();
        operations(&self.doc)
            .into_iter()
            .filter(|(_, op)| !reached.contains(op["operationId"].as_str().unwrap()))
            .map(|(what, _)| what)
            .collect()
    }
}

fn id(body: &Value) -> String {
    body["id"].as_str().unwrap_or_else(|| panic!("no id in {body}")).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_as_documented_on_sqlite() {
    every_operation_answers_as_documented(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_as_documented_on_postgres() {
    every_operation_answers_as_documented(Backend::Postgres).await;
}

async fn every_operation_answers_as_documented(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let mut c = Checked::new(&app);
    meta_and_accounts(&mut c).await;
    let workflow = workflows(&mut c).await;
    let instance = instances(&mut c, &workflow).await;
    operating(&mut c, &workflow, &instance).await;
    triggers(&mut c, &workflow).await;
    tasks_and_scripts(&mut c).await;
    secrets(&mut c).await;
    saved_views(&mut c).await;
    shared_limits(&mut c).await;
    approvals(&mut c).await;
    alerts(&mut c).await;
    cluster(&mut c).await;
    let unreached = c.unreached();
    assert!(unreached.is_empty(), "operations never called: {unreached:?}");
}

/// Without a provider, single sign-on's routes say so (tests/api/sso.rs drives them configured).
async fn single_sign_on_unconfigured(c: &mut Checked<'_>) {
    assert_eq!(c.send("GET", "/api/v1/auth/providers", "/api/v1/auth/providers", None).await.0, 200);
    let login = "/api/v1/auth/oidc/login";
    assert_eq!(c.send("GET", login, &format!("{login}?return_to=/"), None).await.0, 404);
    let callback = "/api/v1/auth/oidc/callback";
    assert_eq!(c.send("GET", callback, &format!("{callback}?code=c&state=s"), None).await.0, 404);
    let preview = Some(json!({"groups": ["ops"]}));
    let mapping = "/api/v1/auth/oidc/mapping/preview";
    assert_eq!(c.send("POST", mapping, mapping, preview).await.0, 404);
    let device = "/api/v1/auth/oidc/device";
    assert_eq!(c.send("POST", device, device, Some(json!({}))).await.0, 404);
    let token = "/api/v1/auth/oidc/device/token";
    assert_eq!(c.send("POST", token, token, Some(json!({"device_code": "x"}))).await.0, 404);
    let traded = "/api/v1/auth/oidc/cli/token";
    assert_eq!(c.send("POST", traded, traded, Some(json!({"code": "c", "code_verifier": "v"}))).await.0, 404);
}

async fn meta_and_accounts(c: &mut Checked<'_>) {
    c.send("GET", "/api/v1/openapi.json", "/api/v1/openapi.json", None).await;
    c.send("GET", "/healthz", "/healthz", None).await;
    c.send("GET", "/readyz", "/readyz", None).await;
    c.send("GET", "/metrics", "/metrics", None).await;
    let login = json!({"username": "admin", "password": crate::common::ADMIN_PASSWORD});
    let (status, session) = c.send("POST", "/api/v1/auth/login", "/api/v1/auth/login", Some(login)).await;
    assert_eq!(status, 200);
    let wrong = json!({"username": "admin", "password": "not the password"});
    assert_eq!(c.send("POST", "/api/v1/auth/login", "/api/v1/auth/login", Some(wrong)).await.0, 401);
    c.send("GET", "/api/v1/auth/me", "/api/v1/auth/me", None).await;
    let anonymous = c.app.client.get(c.app.url("/api/v1/auth/me"));
    assert_eq!(c.check("GET", "/api/v1/auth/me", anonymous).await.0, 401);
    single_sign_on_unconfigured(c).await;

    let user = json!({"username": "ops.user", "password": "password-123", "role": "operator"});
    let (status, created) = c.send("POST", "/api/v1/users", "/api/v1/users", Some(user.clone())).await;
    assert_eq!(status, 201);
    assert_eq!(c.send("POST", "/api/v1/users", "/api/v1/users", Some(user)).await.0, 409);
    c.send("GET", "/api/v1/users", "/api/v1/users", None).await;
    let user_path = format!("/api/v1/users/{}", id(&created));
    assert_eq!(c.send("PATCH", "/api/v1/users/{id}", &user_path, Some(json!({"role": "viewer"}))).await.0, 200);
    assert_eq!(c.send("DELETE", "/api/v1/users/{id}", &user_path, None).await.0, 204);
    assert_eq!(c.send("DELETE", "/api/v1/users/{id}", &user_path, None).await.0, 404);

    let key = json!({"name": "ci", "role": "editor"});
    let (status, created) = c.send("POST", "/api/v1/api-keys", "/api/v1/api-keys", Some(key)).await;
    assert_eq!(status, 201);
    c.send("GET", "/api/v1/api-keys", "/api/v1/api-keys", None).await;
    let key_path = format!("/api/v1/api-keys/{}", id(&created));
    assert_eq!(c.send("DELETE", "/api/v1/api-keys/{id}", &key_path, None).await.0, 204);
    assert_eq!(c.send("DELETE", "/api/v1/api-keys/{id}", &key_path, None).await.0, 404);
    // With the session signed in above, so the admin's token the other requests use stays valid.
    let token = session["access_token"].as_str().unwrap();
    let logout = c.app.client.post(c.app.url("/api/v1/auth/logout")).bearer_auth(token);
    assert_eq!(c.check("POST", "/api/v1/auth/logout", logout).await.0, 204);
}

/// A workflow with version 1 published; its id.
async fn workflows(c: &mut Checked<'_>) -> String {
    let t = "/api/v1/workflows";
    let (status, created) = c.send("POST", t, t, Some(json!({"name": "Orders", "definition": chain()}))).await;
    assert_eq!(status, 201);
    let workflow = id(&created);
    let path = format!("{t}/{workflow}");
    c.send("GET", t, &format!("{t}?limit=200&q=ord"), None).await;
    c.send("GET", "/api/v1/workflows/{id}", &path, None).await;
    let missing = format!("{t}/{}", uuid::Uuid::now_v7());
    assert_eq!(c.send("GET", "/api/v1/workflows/{id}", &missing, None).await.0, 404);
    c.send("PATCH", "/api/v1/workflows/{id}", &path, Some(json!({"description": "Fulfils orders"}))).await;
    let draft = "/api/v1/workflows/{id}/draft";
    let etag = created["etag"].as_str().unwrap().to_owned();
    let app = c.app;
    let save = |etag: &str| app.put(&format!("{path}/draft")).header("if-match", etag).json(&chain());
    let saving = save(&etag);
    assert_eq!(c.check("PUT", draft, saving).await.0, 200);
    let stale = save(&etag);
    assert_eq!(c.check("PUT", draft, stale).await.0, 412);
    assert_eq!(c.send("PUT", draft, &format!("{path}/draft"), Some(chain())).await.0, 428);
    c.send("POST", "/api/v1/workflows/{id}/validate", &format!("{path}/validate"), Some(chain())).await;
    let versions = format!("{path}/versions");
    let publish = Some(json!({"note": "first"}));
    assert_eq!(c.send("POST", "/api/v1/workflows/{id}/versions", &versions, publish).await.0, 201);
    c.send("GET", "/api/v1/workflows/{id}/versions", &versions, None).await;
    c.send("GET", "/api/v1/workflows/{id}/versions/{version}", &format!("{versions}/1"), None).await;
    c.send("POST", "/api/v1/workflows/{id}/archive", &format!("{path}/archive"), None).await;
    c.send("POST", "/api/v1/workflows/{id}/unarchive", &format!("{path}/unarchive"), None).await;
    workflow
}

/// A finished instance of `workflow`; its id.
async fn instances(c: &mut Checked<'_>, workflow: &str) -> String {
    let start = format!("/api/v1/workflows/{workflow}/instances");
    let (status, started) = c
        .send("POST", "/api/v1/workflows/{id}/instances", &start, Some(json!({"input": {"n": 1}, "key": "o-1"})))
        .await;
    assert_eq!(status, 201);
    let instance = id(&started);
    c.app.wait_finished(&instance).await;
    let path = format!("/api/v1/instances/{instance}");
    c.send(
        "GET",
        "/api/v1/instances",
        &format!("/api/v1/instances?status=succeeded&limit=500&workflow={workflow}&input.n=1"),
        None,
    )
    .await;
    assert_eq!(c.send("GET", "/api/v1/instances", "/api/v1/instances?input..n=1", None).await.0, 422);
    let export = "/api/v1/instances/export";
    for format in ["jsonl", "csv"] {
        c.send("GET", export, &format!("{export}?format={format}&input.n=1&workflow={workflow}"), None).await;
    }
    assert_eq!(c.send("GET", export, &format!("{export}?format=xml"), None).await.0, 422);
    c.send("GET", "/api/v1/instances/{id}", &path, None).await;
    c.send("GET", "/api/v1/instances/{id}/history", &format!("{path}/history?limit=5000"), None).await;
    c.send("GET", "/api/v1/instances/{id}/queue", &format!("{path}/queue"), None).await;
    let first_node = c.app.instance_json(&instance).await["nodes"][0]["id"].as_str().unwrap().to_owned();
    let items = format!("{path}/nodes/{first_node}/items?limit=10");
    c.send("GET", "/api/v1/instances/{id}/nodes/{node}/items", &items, None).await;
    c.send("GET", "/api/v1/instances/{id}/events", &format!("{path}/events"), None).await;
    for action in ["cancel", "pause", "resume"] {
        c.send("POST", &format!("/api/v1/instances/{{id}}/{action}"), &format!("{path}/{action}"), None).await;
    }
    let retry = Some(json!({"from": "failed"}));
    c.send("POST", "/api/v1/instances/{id}/retry", &format!("{path}/retry"), retry).await;
    let signal = Some(json!({"node": "a", "payload": {"ok": true}}));
    c.send("POST", "/api/v1/instances/{id}/signal", &format!("{path}/signal"), signal).await;
    c.send("GET", "/api/v1/failures", "/api/v1/failures?limit=500", None).await;
    c.send("GET", "/api/v1/stats/instances", "/api/v1/stats/instances?bucket=hour", None).await;
    instance
}

async fn operating(c: &mut Checked<'_>, workflow: &str, instance: &str) {
    let filter = json!({"filter": {"workflow": workflow}, "dry_run": true});
    for action in ["purge", "cancel", "retry"] {
        let t = format!("/api/v1/instances/{action}");
        assert_eq!(c.send("POST", &t, &t, Some(filter.clone())).await.0, 200);
    }
    let everything = json!({"filter": {"workflow": workflow}});
    let (status, job) = c.send("POST", "/api/v1/instances/cancel", "/api/v1/instances/cancel", Some(everything)).await;
    assert_eq!(status, 202);
    let job = format!("/api/v1/jobs/{}", job["job_id"].as_str().unwrap());
    c.send("GET", "/api/v1/jobs", "/api/v1/jobs?limit=500", None).await;
    c.send("GET", "/api/v1/jobs/{id}", &job, None).await;
    c.send("POST", "/api/v1/jobs/{id}/cancel", &format!("{job}/cancel"), None).await;
    let path = format!("/api/v1/instances/{instance}");
    assert_eq!(c.send("DELETE", "/api/v1/instances/{id}", &path, None).await.0, 204);

    let policy = json!({"succeeded_days": 30, "failed_days": 36500, "audit_days": 1});
    c.send("GET", "/api/v1/retention", "/api/v1/retention", None).await;
    c.send("PUT", "/api/v1/retention", "/api/v1/retention", Some(policy.clone())).await;
    c.send("POST", "/api/v1/retention/preview", "/api/v1/retention/preview", Some(policy)).await;
    let own = format!("/api/v1/workflows/{workflow}/retention");
    let policy = json!({"canceled_days": 1});
    c.send("GET", "/api/v1/workflows/{id}/retention", &own, None).await;
    c.send("PUT", "/api/v1/workflows/{id}/retention", &own, Some(policy.clone())).await;
    c.send("POST", "/api/v1/workflows/{id}/retention/preview", &format!("{own}/preview"), Some(policy)).await;
    c.send("GET", "/api/v1/audit", "/api/v1/audit?limit=500", None).await;
}

async fn triggers(c: &mut Checked<'_>, workflow: &str) {
    let create = format!("/api/v1/workflows/{workflow}/triggers");
    let t = "/api/v1/workflows/{id}/triggers";
    let (status, hook) = c.send("POST", t, &create, Some(json!({"kind": "webhook", "name": "orders"}))).await;
    assert_eq!(status, 201);
    let cron = json!({"kind": "cron", "expression": "*/5 * * * *", "paused": true});
    let (status, cron) = c.send("POST", t, &create, Some(cron)).await;
    assert_eq!(status, 201);
    c.send("GET", t, &create, None).await;
    c.send("GET", "/api/v1/triggers", "/api/v1/triggers", None).await;
    let hook_path = format!("/api/v1/triggers/{}", id(&hook));
    let cron_path = format!("/api/v1/triggers/{}", id(&cron));
    c.send("GET", "/api/v1/triggers/{id}", &hook_path, None).await;
    c.send("PATCH", "/api/v1/triggers/{id}", &hook_path, Some(json!({"paused": true}))).await;
    c.send("POST", "/api/v1/triggers/{id}/rotate-secret", &format!("{hook_path}/rotate-secret"), None).await;
    c.send("GET", "/api/v1/triggers/{id}/deliveries", &format!("{hook_path}/deliveries?limit=500"), None).await;
    c.send("GET", "/api/v1/triggers/{id}/preview", &format!("{cron_path}/preview?count=100"), None).await;
    assert_eq!(c.send("GET", "/api/v1/triggers/{id}/preview", &format!("{hook_path}/preview"), None).await.0, 409);
    let spec = json!({"expression": "0 * * * *", "count": 3});
    c.send("POST", "/api/v1/triggers/preview", "/api/v1/triggers/preview", Some(spec)).await;
    let unsigned = c.app.client.post(c.app.url(&format!("/hooks/{}", id(&hook)))).json(&json!({"order": 1}));
    c.check("POST", "/hooks/{trigger_id}", unsigned).await;
    assert_eq!(c.send("DELETE", "/api/v1/triggers/{id}", &cron_path, None).await.0, 204);
}

async fn tasks_and_scripts(c: &mut Checked<'_>) {
    let poll = json!({"queue": "q", "worker": "w-1", "wait_ms": 0});
    assert_eq!(c.send("POST", "/api/v1/tasks/poll", "/api/v1/tasks/poll", Some(poll)).await.0, 204);
    let task = format!("/api/v1/tasks/{}", uuid::Uuid::now_v7());
    let lease = json!({"lease_token": "stale"});
    c.send("POST", "/api/v1/tasks/{id}/heartbeat", &format!("{task}/heartbeat"), Some(lease.clone())).await;
    let done = json!({"lease_token": "stale", "output": 1});
    c.send("POST", "/api/v1/tasks/{id}/complete", &format!("{task}/complete"), Some(done)).await;
    let failed = json!({"lease_token": "stale", "error": "no"});
    c.send("POST", "/api/v1/tasks/{id}/fail", &format!("{task}/fail"), Some(failed)).await;

    let t = "/api/v1/scripts/preview";
    assert_eq!(c.send("POST", t, t, Some(json!({"source": "return input.n + 1;", "input": {"n": 1}}))).await.0, 200);
    assert_eq!(c.send("POST", t, t, Some(json!({"source": "return (;"}))).await.0, 422);
    assert_eq!(c.send("POST", t, t, Some(json!({"source": "return 1;", "memory_mb": 0}))).await.0, 422);
    let events = c.app.get("/api/v1/events");
    // A live feed that never ends: only its status and media type are checked.
    assert_eq!(c.check("GET", "/api/v1/events", events).await.0, 200);
}

async fn secrets(c: &mut Checked<'_>) {
    let (list, one) = ("/api/v1/secrets", "/api/v1/secrets/{name}");
    let token = json!({"name": "API_TOKEN", "value": "t0ken", "description": "billing"});
    assert_eq!(c.send("POST", list, list, Some(token.clone())).await.0, 201);
    assert_eq!(c.send("POST", list, list, Some(token)).await.0, 409);
    assert_eq!(c.send("POST", list, list, Some(json!({"name": "1bad", "value": "v"}))).await.0, 422);
    let big = json!({"name": "BIG", "value": "x".repeat(64 * 1024 + 1)});
    assert_eq!(c.send("POST", list, list, Some(big)).await.0, 413);
    assert_eq!(c.send("GET", list, list, None).await.0, 200);
    let path = "/api/v1/secrets/API_TOKEN";
    assert_eq!(c.send("PUT", one, path, Some(json!({"value": "n3w"}))).await.0, 200);
    assert_eq!(c.send("PUT", one, "/api/v1/secrets/NONE", Some(json!({"value": "v"}))).await.0, 404);
    assert_eq!(c.send("DELETE", one, path, None).await.0, 204);
    assert_eq!(c.send("DELETE", one, path, None).await.0, 404);
}

async fn saved_views(c: &mut Checked<'_>) {
    let (list, one) = ("/api/v1/views", "/api/v1/views/{id}");
    let view = json!({"name": "failed", "path": "/instances?status=failed", "shared": true});
    let (status, created) = c.send("POST", list, list, Some(view.clone())).await;
    assert_eq!(status, 201);
    assert_eq!(c.send("POST", list, list, Some(view)).await.0, 409);
    assert_eq!(c.send("POST", list, list, Some(json!({"name": "x", "path": "//evil"}))).await.0, 422);
    assert_eq!(c.send("GET", list, list, None).await.0, 200);
    let path = format!("/api/v1/views/{}", id(&created));
    assert_eq!(c.send("DELETE", one, &path, None).await.0, 204);
    assert_eq!(c.send("DELETE", one, &path, None).await.0, 404);
}

async fn shared_limits(c: &mut Checked<'_>) {
    let (list, one, path) = ("/api/v1/limits", "/api/v1/limits/{name}", "/api/v1/limits/api");
    let limit = json!({"name": "api", "concurrency": 2, "rate": {"limit": 10, "period_ms": 1000}});
    assert_eq!(c.send("POST", list, list, Some(limit.clone())).await.0, 201);
    assert_eq!(c.send("POST", list, list, Some(limit)).await.0, 409);
    assert_eq!(c.send("POST", list, list, Some(json!({"name": "x", "concurrency": 0}))).await.0, 422);
    assert_eq!(c.send("GET", list, list, None).await.0, 200);
    assert_eq!(c.send("GET", one, path, None).await.0, 200);
    assert_eq!(c.send("PUT", one, path, Some(json!({"concurrency": 3}))).await.0, 200);
    assert_eq!(c.send("PUT", one, path, Some(json!({"name": "other", "concurrency": 3}))).await.0, 422);
    assert_eq!(c.send("PUT", one, "/api/v1/limits/none", Some(json!({"concurrency": 3}))).await.0, 404);
    assert_eq!(c.send("DELETE", one, path, None).await.0, 204);
    assert_eq!(c.send("DELETE", one, path, None).await.0, 404);
    assert_eq!(c.send("GET", one, path, None).await.0, 404);
}

async fn approvals(c: &mut Checked<'_>) {
    let form = json!({"type": "object", "required": ["why"], "properties": {"why": {"type": "string"}}});
    let asking = json!({"nodes": [{"id": "ok", "type": "approval", "config": {"title": "Go?", "form": form,
        "assignees": {"roles": ["operator"]}, "allow_starter": true}}]});
    let workflow = c.app.publish(asking).await;
    let instance = c.app.start(&workflow, json!({})).await;
    let (list, one, decide) = ("/api/v1/approvals", "/api/v1/approvals/{id}", "/api/v1/approvals/{id}/decision");
    let mut approval = Value::Null;
    for _ in 0..500 {
        let (status, page) = c.send("GET", list, &format!("{list}?instance_id={instance}&status=open"), None).await;
        assert_eq!(status, 200);
        if let Some(first) = page["items"].get(0) {
            approval = first.clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let path = format!("/api/v1/approvals/{}", id(&approval));
    assert_eq!(c.send("GET", list, &format!("{list}?status=sideways"), None).await.0, 422);
    assert_eq!(c.send("GET", "/api/v1/approvals/count", "/api/v1/approvals/count", None).await.0, 200);
    assert_eq!(c.send("GET", one, &path, None).await.0, 200);
    assert_eq!(c.send("GET", one, "/api/v1/approvals/0190a000-0000-7000-8000-000000000000", None).await.0, 404);
    let decision = format!("{path}/decision");
    assert_eq!(c.send("POST", decide, &decision, Some(json!({"decision": "approve"}))).await.0, 422);
    let long = json!({"decision": "approve", "response": {"why": "x"}, "comment": "c".repeat(20_000)});
    assert_eq!(c.send("POST", decide, &decision, Some(long)).await.0, 413);
    let body = json!({"decision": "approve", "response": {"why": "fine"}});
    assert_eq!(c.send("POST", decide, &decision, Some(body.clone())).await.0, 200);
    assert_eq!(c.send("POST", decide, &decision, Some(body)).await.0, 409);
}

async fn cluster(c: &mut Checked<'_>) {
    let (show, resume) = ("/api/v1/cluster", "/api/v1/cluster/resume");
    let (status, body) = c.send("GET", show, show, None).await;
    assert_eq!(status, 200);
    assert_eq!(body["held"], false);
    assert_eq!(c.send("POST", resume, resume, None).await.0, 200);
}

async fn alerts(c: &mut Checked<'_>) {
    let list = "/api/v1/alerts";
    // Port 9 on loopback (allowed in tests) refuses the connection: the test answers 200, undelivered.
    let rule = json!({"name": "ops", "when": "failed", "url": "http://127.0.0.1:9/hook", "dedupe_ms": 1000});
    let (status, created) = c.send("POST", list, list, Some(rule)).await;
    assert_eq!(status, 201);
    let refused = json!({"name": "ops", "when": "failed", "url": "http://10.0.0.1/hook"});
    assert_eq!(c.send("POST", list, list, Some(refused)).await.0, 422);
    assert_eq!(c.send("GET", list, list, None).await.0, 200);
    let id = id(&created);
    let (test, deliveries) = ("/api/v1/alerts/{id}/test", "/api/v1/alerts/{id}/deliveries");
    assert_eq!(c.send("POST", test, &format!("/api/v1/alerts/{id}/test"), Some(json!({}))).await.0, 200);
    assert_eq!(c.send("GET", deliveries, &format!("/api/v1/alerts/{id}/deliveries"), None).await.0, 200);
    let one = "/api/v1/alerts/{id}";
    assert_eq!(c.send("DELETE", one, &format!("/api/v1/alerts/{id}"), None).await.0, 204);
    assert_eq!(c.send("DELETE", one, &format!("/api/v1/alerts/{id}"), None).await.0, 404);
    assert_eq!(c.send("GET", deliveries, &format!("/api/v1/alerts/{id}/deliveries"), None).await.0, 404);
}
