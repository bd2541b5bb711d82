use crate::common::{both_backends, problem, TestApp, JWT_SECRET};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn claims(role: &str, iat: i64, exp: i64) -> Value {
    json!({"sub": uuid::Uuid::new_v4().to_string(), "sid": uuid::Uuid::new_v4().to_string(), "name": "mallory",
           "role": role, "iss": "trellis", "aud": "trellis-api", "iat": iat, "exp": exp})
}

fn signed(claims: &Value) -> String {
    encode(&Header::default(), claims, &EncodingKey::from_secret(JWT_SECRET.as_bytes())).unwrap()
}

async fn login_returns_a_bearer_token_and_an_http_only_strict_cookie(app: TestApp) {
    let response = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": crate::common::ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("trellis_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"), "{cookie}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert!(body["expires_in"].as_u64().unwrap() > 0);

    let token = body["access_token"].as_str().unwrap();
    let me: Value = app
        .client
        .get(app.url("/api/v1/auth/me"))
        .header("cookie", format!("trellis_session={token}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["username"], "admin");
    assert_eq!(me["role"], "admin");
}

async fn wrong_passwords_and_unknown_users_get_the_same_401(app: TestApp) {
    for (user, password) in [("admin", "not-the-password"), ("nobody", "whatever-password")] {
        let response = app
            .client
            .post(app.url("/api/v1/auth/login"))
            .json(&json!({"username": user, "password": password}))
            .send()
            .await
            .unwrap();
        let body = problem(response, 401).await;
        assert_eq!(body["detail"], "wrong username or password");
    }
}

async fn missing_expired_tampered_and_unsigned_tokens_get_401(app: TestApp) {
    let path = "/api/v1/workflows";
    let no_credentials = app.client.get(app.url(path)).send().await.unwrap();
    problem(no_credentials, 401).await;

    let expired = signed(&claims("admin", now() - 7200, now() - 3600));
    let body = problem(app.client.get(app.url(path)).bearer_auth(expired).send().await.unwrap(), 401).await;
    assert!(body["detail"].as_str().unwrap().contains("expired"));

    let (head, rest) = app.admin_token.split_once('.').unwrap();
    let signature = rest.split_once('.').unwrap().1;
    let payload = URL_SAFE_NO_PAD.encode(claims("admin", now(), now() + 600).to_string());
    let tampered = format!("{head}.{payload}.{signature}");
    problem(app.client.get(app.url(path)).bearer_auth(tampered).send().await.unwrap(), 401).await;

    let none_header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    let unsigned = format!("{none_header}.{payload}.");
    problem(app.client.get(app.url(path)).bearer_auth(unsigned).send().await.unwrap(), 401).await;

    let mut no_audience = claims("admin", now(), now() + 600);
    no_audience.as_object_mut().unwrap().remove("aud");
    problem(app.client.get(app.url(path)).bearer_auth(signed(&no_audience)).send().await.unwrap(), 401).await;

    let garbage = app.client.get(app.url(path)).header("authorization", "Basic YWRtaW46YWRtaW4=").send().await.unwrap();
    problem(garbage, 401).await;

    // Well signed, but naming no session this server started, or no session at all: refused.
    let unknown_session = signed(&claims("admin", now(), now() + 600));
    let body = problem(app.client.get(app.url(path)).bearer_auth(unknown_session).send().await.unwrap(), 401).await;
    assert!(body["detail"].as_str().unwrap().contains("session has ended"), "{body}");
    let mut sessionless = claims("admin", now(), now() + 600);
    sessionless.as_object_mut().unwrap().remove("sid");
    problem(app.client.get(app.url(path)).bearer_auth(signed(&sessionless)).send().await.unwrap(), 401).await;

    assert_eq!(app.client.get(app.url(path)).bearer_auth(&app.admin_token).send().await.unwrap().status(), 200);
}

async fn roles_below_the_route_minimum_get_403(app: TestApp) {
    let viewer = app.token_for("viewer").await;
    let editor = app.token_for("editor").await;
    let create =
        |token: &str| app.client.post(app.url("/api/v1/workflows")).bearer_auth(token).json(&json!({"name": "x"}));

    let body = problem(create(&viewer).send().await.unwrap(), 403).await;
    assert!(body["detail"].as_str().unwrap().contains("editor"));
    assert_eq!(create(&editor).send().await.unwrap().status(), 201);
    assert_eq!(app.client.get(app.url("/api/v1/workflows")).bearer_auth(&viewer).send().await.unwrap().status(), 200);

    let key_request = json!({"name": "ci", "role": "viewer"});
    let by_editor =
        app.client.post(app.url("/api/v1/api-keys")).bearer_auth(&editor).json(&key_request).send().await.unwrap();
    problem(by_editor, 403).await;
    let users = app
        .client
        .post(app.url("/api/v1/users"))
        .bearer_auth(&editor)
        .json(&json!({"username": "eve", "password": "password-123", "role": "admin"}))
        .send()
        .await
        .unwrap();
    problem(users, 403).await;
}

async fn api_keys_are_shown_once_work_as_bearer_tokens_and_can_be_revoked(app: TestApp) {
    let created =
        app.post("/api/v1/api-keys").json(&json!({"name": "deploy bot", "role": "editor"})).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let key = created["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("trk_"));

    let listed: Value = app.get("/api/v1/api-keys").send().await.unwrap().json().await.unwrap();
    let listed = listed.to_string();
    assert!(listed.contains("deploy bot") && !listed.contains(&key), "the secret must not be listed again");

    let with_key =
        |k: &str| app.client.post(app.url("/api/v1/workflows")).bearer_auth(k).json(&json!({"name": "by key"}));
    assert_eq!(with_key(&key).send().await.unwrap().status(), 201);
    problem(with_key(&format!("{key}x")).send().await.unwrap(), 401).await;

    let id = created["id"].as_str().unwrap();
    let revoked = app.as_admin(app.client.delete(app.url(&format!("/api/v1/api-keys/{id}")))).send().await.unwrap();
    assert_eq!(revoked.status(), 204);
    problem(with_key(&key).send().await.unwrap(), 401).await;
}

async fn every_api_route_refuses_anonymous_callers(app: TestApp) {
    let id = uuid::Uuid::now_v7();
    let routes = [
        ("GET", "/api/v1/auth/me".to_owned()),
        ("POST", "/api/v1/auth/oidc/mapping/preview".to_owned()),
        ("GET", "/api/v1/workflows".to_owned()),
        ("POST", "/api/v1/workflows".to_owned()),
        ("GET", format!("/api/v1/workflows/{id}")),
        ("PATCH", format!("/api/v1/workflows/{id}")),
        ("POST", format!("/api/v1/workflows/{id}/archive")),
        ("POST", format!("/api/v1/workflows/{id}/unarchive")),
        ("PUT", format!("/api/v1/workflows/{id}/draft")),
        ("POST", format!("/api/v1/workflows/{id}/validate")),
        ("GET", format!("/api/v1/workflows/{id}/versions")),
        ("POST", format!("/api/v1/workflows/{id}/versions")),
        ("GET", format!("/api/v1/workflows/{id}/versions/1")),
        ("GET", "/api/v1/api-keys".to_owned()),
        ("POST", "/api/v1/api-keys".to_owned()),
        ("DELETE", format!("/api/v1/api-keys/{id}")),
        ("POST", "/api/v1/users".to_owned()),
        ("PATCH", format!("/api/v1/users/{id}")),
        ("DELETE", format!("/api/v1/users/{id}")),
        ("POST", format!("/api/v1/workflows/{id}/instances")),
        ("GET", "/api/v1/instances".to_owned()),
        ("GET", "/api/v1/instances/export?format=csv".to_owned()),
        ("GET", format!("/api/v1/instances/{id}")),
        ("POST", format!("/api/v1/instances/{id}/cancel")),
        ("POST", format!("/api/v1/instances/{id}/signal")),
        ("POST", format!("/api/v1/instances/{id}/pause")),
        ("POST", format!("/api/v1/instances/{id}/resume")),
        ("POST", format!("/api/v1/instances/{id}/retry")),
        ("GET", format!("/api/v1/instances/{id}/events")),
        ("GET", format!("/api/v1/instances/{id}/history")),
        ("GET", "/api/v1/events".to_owned()),
        ("POST", format!("/api/v1/workflows/{id}/triggers")),
        ("GET", format!("/api/v1/workflows/{id}/triggers")),
        ("GET", format!("/api/v1/triggers/{id}")),
        ("PATCH", format!("/api/v1/triggers/{id}")),
        ("DELETE", format!("/api/v1/triggers/{id}")),
        ("POST", format!("/api/v1/triggers/{id}/rotate-secret")),
        ("GET", format!("/api/v1/triggers/{id}/deliveries")),
        ("GET", format!("/api/v1/triggers/{id}/preview")),
        ("POST", "/api/v1/triggers/preview".to_owned()),
        ("POST", "/api/v1/tasks/poll".to_owned()),
        ("POST", format!("/api/v1/tasks/{id}/heartbeat")),
        ("POST", format!("/api/v1/tasks/{id}/complete")),
        ("POST", format!("/api/v1/tasks/{id}/fail")),
        ("GET", "/api/v1/audit".to_owned()),
        ("DELETE", format!("/api/v1/instances/{id}")),
        ("POST", "/api/v1/instances/purge".to_owned()),
        ("POST", "/api/v1/instances/cancel".to_owned()),
        ("POST", "/api/v1/instances/retry".to_owned()),
        ("GET", format!("/api/v1/instances/{id}/queue")),
        ("GET", "/api/v1/jobs".to_owned()),
        ("GET", format!("/api/v1/jobs/{id}")),
        ("POST", format!("/api/v1/jobs/{id}/cancel")),
        ("GET", "/api/v1/retention".to_owned()),
        ("PUT", "/api/v1/retention".to_owned()),
        ("GET", format!("/api/v1/workflows/{id}/retention")),
        ("PUT", format!("/api/v1/workflows/{id}/retention")),
        ("POST", "/api/v1/scripts/preview".to_owned()),
        ("GET", "/api/v1/secrets".to_owned()),
        ("POST", "/api/v1/secrets".to_owned()),
        ("PUT", "/api/v1/secrets/TOKEN".to_owned()),
        ("DELETE", "/api/v1/secrets/TOKEN".to_owned()),
        ("GET", "/api/v1/views".to_owned()),
        ("POST", "/api/v1/views".to_owned()),
        ("DELETE", format!("/api/v1/views/{id}")),
        ("GET", "/api/v1/alerts".to_owned()),
        ("POST", "/api/v1/alerts".to_owned()),
        ("DELETE", format!("/api/v1/alerts/{id}")),
        ("POST", format!("/api/v1/alerts/{id}/test")),
        ("GET", format!("/api/v1/alerts/{id}/deliveries")),
    ];
    for (method, path) in routes {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = app
            .client
            .request(method.clone(), app.url(&path))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{method} {path}");
    }
}
both_backends!(
    login_returns_a_bearer_token_and_an_http_only_strict_cookie,
    wrong_passwords_and_unknown_users_get_the_same_401,
    missing_expired_tampered_and_unsigned_tokens_get_401,
    roles_below_the_route_minimum_get_403,
    api_keys_are_shown_once_work_as_bearer_tokens_and_can_be_revoked,
    every_api_route_refuses_anonymous_callers
);
