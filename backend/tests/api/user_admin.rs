//! Admins list users and disable them: a disabled user's sessions and API keys stop working at
//! once, signing in is refused with a reason, and enabling them again restores both.

use crate::common::{both_backends, problem, TestApp};
use serde_json::json;
use trellis_model::api::{Items, UserView};
use trellis_model::Role;

async fn users(app: &TestApp) -> Vec<UserView> {
    let listed = app.get("/api/v1/users").send().await.unwrap();
    assert_eq!(listed.status(), 200);
    listed.json::<Items<UserView>>().await.unwrap().items
}

async fn a_disabled_user_is_shut_out_at_once_and_let_back_in_when_enabled(app: TestApp) {
    let token = app.token_for("admin").await;
    let me = |t: &str| app.client.get(app.url("/api/v1/auth/me")).bearer_auth(t.to_owned()).send();
    assert_eq!(me(&token).await.unwrap().status(), 200);
    // An API key made by that user.
    let made = app
        .client
        .post(app.url("/api/v1/api-keys"))
        .bearer_auth(&token)
        .json(&json!({"name": "ci", "role": "viewer"}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let key = made.json::<serde_json::Value>().await.unwrap()["key"].as_str().unwrap().to_owned();
    assert_eq!(me(&key).await.unwrap().status(), 200);

    let listed = users(&app).await;
    let user = listed.iter().find(|u| u.username == "admin-user").unwrap().clone();
    assert!(!user.disabled);
    assert!(listed.windows(2).all(|w| w[0].username <= w[1].username), "by username");
    let path = format!("/api/v1/users/{}", user.id);
    let disabled =
        app.as_admin(app.client.patch(app.url(&path))).json(&json!({"disabled": true})).send().await.unwrap();
    assert_eq!(disabled.status(), 200);
    assert!(users(&app).await.iter().any(|u| u.id == user.id && u.disabled));
    problem(me(&token).await.unwrap(), 401).await;
    problem(me(&key).await.unwrap(), 401).await;
    let refused = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": "admin-user", "password": "password-123"}))
        .send()
        .await
        .unwrap();
    assert!(problem(refused, 403).await["detail"].as_str().unwrap().contains("disabled"));
    let wrong = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": "admin-user", "password": "not-it-at-all"}))
        .send()
        .await
        .unwrap();
    problem(wrong, 401).await;

    let enabled =
        app.as_admin(app.client.patch(app.url(&path))).json(&json!({"disabled": false})).send().await.unwrap();
    assert_eq!(enabled.status(), 200);
    assert_eq!(me(&key).await.unwrap().status(), 200, "the key works again");
    let again = app.login("admin-user", "password-123").await;
    assert_eq!(me(&again).await.unwrap().status(), 200);
}

async fn admins_cannot_disable_themselves_and_viewers_cannot_list_users(app: TestApp) {
    let admin = users(&app).await.into_iter().find(|u| u.role == Role::Admin).unwrap();
    let own = app
        .as_admin(app.client.patch(app.url(&format!("/api/v1/users/{}", admin.id))))
        .json(&json!({"disabled": true}))
        .send()
        .await
        .unwrap();
    assert!(problem(own, 409).await["detail"].as_str().unwrap().contains("your own account"));
    let viewer = app.token_for("viewer").await;
    problem(app.client.get(app.url("/api/v1/users")).bearer_auth(viewer).send().await.unwrap(), 403).await;
    let bad = app
        .as_admin(app.client.patch(app.url(&format!("/api/v1/users/{}", admin.id))))
        .json(&json!({"disabled": "yes"}))
        .send()
        .await
        .unwrap();
    problem(bad, 422).await;
    assert!(users(&app).await.iter().all(|u| !u.disabled));
}
both_backends!(
    a_disabled_user_is_shut_out_at_once_and_let_back_in_when_enabled,
    admins_cannot_disable_themselves_and_viewers_cannot_list_users
);
