//! Security headers on every answer, no-store on auth answers, and who may read /metrics.

use crate::common::{both_backends, problem, Backend, TestApp};
use serde_json::json;
use trellis::config::MetricsAccess;

fn assert_secure(response: &reqwest::Response, what: &str) {
    let h = response.headers();
    let csp = h.get("content-security-policy").unwrap_or_else(|| panic!("{what}: no CSP")).to_str().unwrap();
    for directive in [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{what}: {directive} missing from {csp}");
    }
    let scripts = csp.split(';').map(str::trim).find(|d| d.starts_with("script-src")).unwrap();
    assert!(!scripts.contains("unsafe-inline") && !scripts.contains("'unsafe-eval'"), "{what}: {scripts}");
    assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
    assert_eq!(h["x-frame-options"], "DENY", "{what}");
    assert_eq!(h["referrer-policy"], "no-referrer", "{what}");
}

/// A server whose web dir holds a stand-in app, so the SPA's answers can be inspected.
async fn with_spa(backend: Backend) -> (TestApp, tempfile::TempDir) {
    let web = tempfile::tempdir().unwrap();
    std::fs::write(web.path().join("index.html"), "<!doctype html><title>t</title>").unwrap();
    std::fs::write(web.path().join("boot.js"), "// app").unwrap();
    let dir = web.path().to_owned();
    (TestApp::spawn_with(backend, |s| s.web_dir = Some(dir)).await, web)
}

async fn auth_answers_are_never_cached(app: TestApp) {
    let login = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": crate::common::ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.headers()["cache-control"], "no-store");
    assert_eq!(app.get("/api/v1/auth/me").send().await.unwrap().headers()["cache-control"], "no-store");
    let key = app.post("/api/v1/api-keys").json(&json!({"name": "ci", "role": "viewer"})).send().await.unwrap();
    assert_eq!(key.status(), 201);
    assert_eq!(key.headers()["cache-control"], "no-store");
    let out = app.post("/api/v1/auth/logout").send().await.unwrap();
    assert_eq!(out.headers()["cache-control"], "no-store");
}

async fn metrics_need_a_credential_by_default(app: TestApp) {
    problem(app.client.get(app.url("/metrics")).send().await.unwrap(), 401).await;
    problem(app.client.get(app.url("/metrics")).bearer_auth("guess").send().await.unwrap(), 401).await;
    assert_eq!(app.get("/metrics").send().await.unwrap().status(), 200, "a sign-in token");
    let key: serde_json::Value = app
        .post("/api/v1/api-keys")
        .json(&json!({"name": "prometheus", "role": "viewer"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let by_key = app.client.get(app.url("/metrics")).bearer_auth(key["key"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(by_key.status(), 200, "an API key");
}
both_backends!(auth_answers_are_never_cached, metrics_need_a_credential_by_default);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_follow_the_setting() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.metrics = MetricsAccess::Token;
        s.metrics_token = Some("scrape-secret-123".into());
    })
    .await;
    let scrape = app.client.get(app.url("/metrics")).bearer_auth("scrape-secret-123").send().await.unwrap();
    assert_eq!(scrape.status(), 200);
    problem(app.client.get(app.url("/metrics")).bearer_auth("scrape-secret-124").send().await.unwrap(), 401).await;

    let public = TestApp::spawn_with(Backend::Sqlite, |s| s.metrics = MetricsAccess::Public).await;
    assert_eq!(public.client.get(public.url("/metrics")).send().await.unwrap().status(), 200);

    let off = TestApp::spawn_with(Backend::Sqlite, |s| s.metrics = MetricsAccess::Off).await;
    problem(off.get("/metrics").send().await.unwrap(), 404).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_the_api_and_errors_carry_security_headers() {
    let (app, _web) = with_spa(Backend::Sqlite).await;
    for path in ["/", "/workflows/some-id", "/boot.js"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_secure(&response, path);
    }
    assert_secure(&app.get("/api/v1/workflows").send().await.unwrap(), "an API answer");
    assert_secure(&app.client.get(app.url("/api/v1/workflows")).send().await.unwrap(), "a 401");
    assert_secure(&app.client.get(app.url("/healthz")).send().await.unwrap(), "a probe");
}
