//! Cross-site requests: a change carried by the session cookie must come from this
//! server's own pages, and every mutating body must be JSON. Bearer clients only meet the
//! JSON rule; webhooks meet neither.

use crate::common::{both_backends, chain, problem, Backend, TestApp};
use serde_json::json;

fn cookie(app: &TestApp) -> String {
    format!("trellis_session={}", app.admin_token)
}

fn own_origin(app: &TestApp) -> String {
    format!("http://{}", app.addr)
}

async fn cookie_changes_from_another_origin_or_without_one_are_refused(app: TestApp) {
    let wf = app.publish(chain()).await;
    let start = format!("/api/v1/workflows/{wf}/instances");
    let cookie_post = |path: &str| app.client.post(app.url(path)).header("cookie", cookie(&app));

    // Another port on the same host is another origin (SameSite would let it through).
    let foreign = cookie_post(&start).header("origin", "http://127.0.0.1:1").json(&json!({})).send().await.unwrap();
    let body = problem(foreign, 403).await;
    assert!(body["detail"].as_str().unwrap().contains("http://127.0.0.1:1"), "{body}");
    problem(cookie_post(&start).header("origin", "null").json(&json!({})).send().await.unwrap(), 403).await;
    problem(cookie_post(&start).json(&json!({})).send().await.unwrap(), 403).await;
    problem(cookie_post(&start).header("sec-fetch-site", "cross-site").json(&json!({})).send().await.unwrap(), 403)
        .await;
    // Bodyless changes are checked too.
    let archive = format!("/api/v1/workflows/{wf}/archive");
    problem(cookie_post(&archive).header("origin", "http://evil.example").send().await.unwrap(), 403).await;

    let listed: serde_json::Value = app.get("/api/v1/instances").send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"], json!([]), "nothing was started");

    let same = cookie_post(&start).header("origin", own_origin(&app)).json(&json!({})).send().await.unwrap();
    assert_eq!(same.status(), 201);
    let fetched = cookie_post(&start).header("sec-fetch-site", "same-origin").json(&json!({})).send().await.unwrap();
    assert_eq!(fetched.status(), 201, "Sec-Fetch-Site stands in for a missing Origin");
    let bearer = app.post(&start).header("origin", "http://evil.example").json(&json!({})).send().await.unwrap();
    assert_eq!(bearer.status(), 201, "bearer clients are not subject to the origin rule");
}

async fn mutating_bodies_must_be_json_whoever_sends_them(app: TestApp) {
    let wf = app.publish(chain()).await;
    let start = format!("/api/v1/workflows/{wf}/instances");
    // The classic forgery: a "simple" text/plain POST, which needs no CORS preflight.
    let text = app
        .client
        .post(app.url(&start))
        .header("cookie", cookie(&app))
        .header("origin", own_origin(&app))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    problem(text, 415).await;
    // Routes that read raw bytes (an optional body) too, and bearer clients too.
    let publish = format!("/api/v1/workflows/{wf}/versions");
    problem(app.post(&publish).header("content-type", "text/plain").body(r#"{"note":"x"}"#).send().await.unwrap(), 415)
        .await;
    problem(app.post(&start).body("{}").send().await.unwrap(), 415).await;
    let form =
        app.post(&start).header("content-type", "application/x-www-form-urlencoded").body("a=1").send().await.unwrap();
    problem(form, 415).await;

    assert_eq!(
        app.post(&start)
            .header("content-type", "application/json; charset=utf-8")
            .body("{}")
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    assert_eq!(
        app.post(&start)
            .header("content-type", "application/vnd.trellis+json")
            .body("{}")
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    assert_eq!(app.post(&publish).send().await.unwrap().status(), 201, "an empty body needs no type");
}

async fn sign_in_from_another_origin_is_refused(app: TestApp) {
    let login = |origin: Option<&str>| {
        let request = app
            .client
            .post(app.url("/api/v1/auth/login"))
            .json(&json!({"username": "admin", "password": crate::common::ADMIN_PASSWORD}));
        match origin {
            Some(o) => request.header("origin", o),
            None => request,
        }
    };
    problem(login(Some("http://evil.example")).send().await.unwrap(), 403).await;
    assert_eq!(login(Some(&own_origin(&app))).send().await.unwrap().status(), 200);
    assert_eq!(login(None).send().await.unwrap().status(), 200, "programs send no Origin");
}

async fn webhooks_accept_any_content_type_and_origin(app: TestApp) {
    let wf = app.publish(chain()).await;
    let (trigger, secret) = crate::webhooks::create_webhook(&app, &wf, json!({})).await;
    let (id, ts, body) = ("plain-1", chrono::Utc::now().timestamp(), r#"{"n": 1}"#);
    let hook = app
        .client
        .post(app.url(&format!("/hooks/{trigger}")))
        .header("origin", "http://evil.example")
        .header("content-type", "text/plain")
        .header("webhook-id", id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", crate::webhooks::signature(&secret, id, ts, body))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(hook.status(), 202);
}

async fn the_public_url_counts_as_this_servers_origin(app: TestApp) {
    drop(app);
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.public_url = Some("https://trellis.example.com".into())).await;
    let wf = app.publish(chain()).await;
    let start = format!("/api/v1/workflows/{wf}/instances");
    let via_proxy = app
        .client
        .post(app.url(&start))
        .header("cookie", cookie(&app))
        .header("origin", "https://trellis.example.com")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(via_proxy.status(), 201);
    let sibling = app
        .client
        .post(app.url(&start))
        .header("cookie", cookie(&app))
        .header("origin", "https://evil.trellis.example.com")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    problem(sibling, 403).await;
}
both_backends!(
    cookie_changes_from_another_origin_or_without_one_are_refused,
    mutating_bodies_must_be_json_whoever_sends_them,
    sign_in_from_another_origin_is_refused,
    webhooks_accept_any_content_type_and_origin,
    the_public_url_counts_as_this_servers_origin
);
