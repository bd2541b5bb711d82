//! Sessions end server-side: a token stops working when its user is deleted, its role is
//! lowered, its password changes, or it signs out; and the users admins can change.

use crate::common::{both_backends, problem, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Creates `username` as an editor; returns its id.
async fn editor(app: &TestApp, username: &str) -> String {
    let created = app
        .post("/api/v1/users")
        .json(&json!({"username": username, "password": "password-123", "role": "editor"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    created.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
}

async fn create_workflow(app: &TestApp, token: &str) -> StatusCode {
    app.client
        .post(app.url("/api/v1/workflows"))
        .bearer_auth(token)
        .json(&json!({"name": "by session"}))
        .send()
        .await
        .unwrap()
        .status()
}

async fn ended(app: &TestApp, token: &str) {
    let response = app.client.get(app.url("/api/v1/workflows")).bearer_auth(token).send().await.unwrap();
    let body = problem(response, 401).await;
    assert!(body["detail"].as_str().unwrap().contains("sign in again"), "{body}");
}

async fn a_lowered_role_applies_to_tokens_issued_before_it(app: TestApp) {
    let id = editor(&app, "ed").await;
    let token = app.login("ed", "password-123").await;
    assert_eq!(create_workflow(&app, &token).await, StatusCode::CREATED);

    let lowered = app.patch(&format!("/api/v1/users/{id}")).json(&json!({"role": "viewer"})).send().await.unwrap();
    assert_eq!(lowered.status(), 200);
    assert_eq!(lowered.json::<Value>().await.unwrap()["role"], "viewer");

    assert_eq!(create_workflow(&app, &token).await, StatusCode::FORBIDDEN);
    let me: Value =
        app.client.get(app.url("/api/v1/auth/me")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!(me["role"], "viewer");
}

async fn a_password_change_ends_every_session_of_the_user(app: TestApp) {
    let id = editor(&app, "ed").await;
    let first = app.login("ed", "password-123").await;
    let second = app.login("ed", "password-123").await;
    let changed =
        app.patch(&format!("/api/v1/users/{id}")).json(&json!({"password": "another-password"})).send().await.unwrap();
    assert_eq!(changed.status(), 200);
    ended(&app, &first).await;
    ended(&app, &second).await;
    let fresh = app.login("ed", "another-password").await;
    assert_eq!(create_workflow(&app, &fresh).await, StatusCode::CREATED);
}

async fn a_deleted_users_tokens_stop_working(app: TestApp) {
    let id = editor(&app, "ed").await;
    let token = app.login("ed", "password-123").await;
    let deleted = app.as_admin(app.client.delete(app.url(&format!("/api/v1/users/{id}")))).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    ended(&app, &token).await;
    let cookie = app
        .client
        .post(app.url("/api/v1/workflows"))
        .header("cookie", format!("trellis_session={token}"))
        .header("origin", format!("http://{}", app.addr))
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    problem(cookie, 401).await;
    let again = app.as_admin(app.client.delete(app.url(&format!("/api/v1/users/{id}")))).send().await.unwrap();
    problem(again, 404).await;
}

async fn signing_out_ends_that_session_server_side_and_only_that_one(app: TestApp) {
    editor(&app, "ed").await;
    let by_bearer = app.login("ed", "password-123").await;
    let by_cookie = app.login("ed", "password-123").await;
    let other = app.login("ed", "password-123").await;

    let out = app.client.post(app.url("/api/v1/auth/logout")).bearer_auth(&by_bearer).send().await.unwrap();
    assert_eq!(out.status(), 204);
    assert_eq!(out.headers()["cache-control"], "no-store");
    ended(&app, &by_bearer).await;

    let out = app
        .client
        .post(app.url("/api/v1/auth/logout"))
        .header("cookie", format!("trellis_session={by_cookie}"))
        .header("origin", format!("http://{}", app.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    assert!(out.headers()["set-cookie"].to_str().unwrap().starts_with("trellis_session=;"));
    ended(&app, &by_cookie).await;

    assert_eq!(create_workflow(&app, &other).await, StatusCode::CREATED, "other sessions carry on");
}

async fn admins_cannot_delete_or_demote_themselves(app: TestApp) {
    let me: Value = app.get("/api/v1/auth/me").send().await.unwrap().json().await.unwrap();
    let id = me["id"].as_str().unwrap();
    problem(app.as_admin(app.client.delete(app.url(&format!("/api/v1/users/{id}")))).send().await.unwrap(), 409).await;
    problem(app.patch(&format!("/api/v1/users/{id}")).json(&json!({"role": "editor"})).send().await.unwrap(), 409)
        .await;
    let nothing = app.patch(&format!("/api/v1/users/{id}")).json(&json!({})).send().await.unwrap();
    problem(nothing, 422).await;
    let editor_token = app.token_for("editor").await;
    let by_editor =
        app.client.delete(app.url(&format!("/api/v1/users/{id}"))).bearer_auth(&editor_token).send().await.unwrap();
    problem(by_editor, 403).await;
}
both_backends!(
    a_lowered_role_applies_to_tokens_issued_before_it,
    a_password_change_ends_every_session_of_the_user,
    a_deleted_users_tokens_stop_working,
    signing_out_ends_that_session_server_side_and_only_that_one,
    admins_cannot_delete_or_demote_themselves
);
