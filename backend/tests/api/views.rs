//! Saved views: private to their owner or shared with everyone, listed by name, deleted by
//! their owner or an admin, and refused when their name or path could mislead.

use crate::common::{both_backends, problem, TestApp};
use reqwest::RequestBuilder;
use serde_json::{json, Value};

async fn create_as(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.client.post(app.url("/api/v1/views")).bearer_auth(token).json(&body).send().await.unwrap()
}

async fn names_seen_by(app: &TestApp, token: &str) -> Vec<String> {
    let list: Value =
        app.client.get(app.url("/api/v1/views")).bearer_auth(token).send().await.unwrap().json().await.unwrap();
    list["items"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().to_owned()).collect()
}

fn delete(app: &TestApp, id: &str) -> RequestBuilder {
    app.client.delete(app.url(&format!("/api/v1/views/{id}")))
}

async fn a_view_is_created_listed_by_name_and_deleted(app: TestApp) {
    let path = "/instances?status=failed&workflow=0190a0b2-0000-7000-8000-000000000000";
    let created = app.post("/api/v1/views").json(&json!({"name": "  Failed orders ", "path": path})).send().await;
    let created = created.unwrap();
    assert_eq!(created.status(), 201);
    let view: Value = created.json().await.unwrap();
    assert_eq!(view["name"], "Failed orders", "the name is trimmed");
    assert_eq!(view["path"], path);
    assert_eq!(view["shared"], false, "private unless asked");
    assert_eq!(view["owner"]["name"], "admin");
    assert!(view["owner"]["id"].is_string() && view["created_at"].is_string() && view["id"].is_string());

    let other = json!({"name": "all runs", "path": "/instances", "shared": true});
    assert_eq!(app.post("/api/v1/views").json(&other).send().await.unwrap().status(), 201);
    let list: Value = app.get("/api/v1/views").send().await.unwrap().json().await.unwrap();
    let names: Vec<&str> = list["items"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Failed orders", "all runs"], "sorted by name");

    let id = view["id"].as_str().unwrap();
    assert_eq!(app.as_admin(delete(&app, id)).send().await.unwrap().status(), 204);
    problem(app.as_admin(delete(&app, id)).send().await.unwrap(), 404).await;
    let list: Value = app.get("/api/v1/views").send().await.unwrap().json().await.unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
}

async fn another_user_sees_shared_views_but_not_private_ones_and_cannot_delete_them(app: TestApp) {
    let alice = app.token_for("operator").await;
    let bob = app.token_for("editor").await;
    let private = create_as(&app, &alice, json!({"name": "mine", "path": "/instances?status=running"})).await;
    let private: Value = private.json().await.unwrap();
    let shared = json!({"name": "team", "path": "/instances?status=failed", "shared": true});
    let shared: Value = create_as(&app, &alice, shared).await.json().await.unwrap();
    let bobs = create_as(&app, &bob, json!({"name": "mine", "path": "/instances"})).await;
    assert_eq!(bobs.status(), 201, "names are unique per owner, not across owners");

    assert_eq!(names_seen_by(&app, &alice).await, ["mine", "team"]);
    assert_eq!(names_seen_by(&app, &bob).await, ["mine", "team"]);
    let bob_list: Value =
        app.client.get(app.url("/api/v1/views")).bearer_auth(&bob).send().await.unwrap().json().await.unwrap();
    let bob_mine = bob_list["items"].as_array().unwrap().iter().find(|v| v["name"] == "mine").unwrap();
    assert_eq!(bob_mine["owner"]["name"], "editor-user", "Bob sees his own `mine`, not Alice's");

    let shared_id = shared["id"].as_str().unwrap();
    let refused = problem(delete(&app, shared_id).bearer_auth(&bob).send().await.unwrap(), 403).await;
    assert!(refused["detail"].as_str().unwrap().contains("owner"), "{refused}");
    let private_id = private["id"].as_str().unwrap();
    problem(delete(&app, private_id).bearer_auth(&bob).send().await.unwrap(), 404).await;
    assert_eq!(names_seen_by(&app, &alice).await, ["mine", "team"], "nothing was deleted");

    // An admin may delete anyone's view; the owner their own.
    assert_eq!(app.as_admin(delete(&app, shared_id)).send().await.unwrap().status(), 204);
    assert_eq!(delete(&app, private_id).bearer_auth(&alice).send().await.unwrap().status(), 204);
    assert_eq!(names_seen_by(&app, &bob).await, ["mine"]);
}

async fn viewers_keep_private_views_but_cannot_share_them(app: TestApp) {
    let viewer = app.token_for("viewer").await;
    let private = create_as(&app, &viewer, json!({"name": "watch", "path": "/instances?status=failed"})).await;
    assert_eq!(private.status(), 201);
    let shared = json!({"name": "watch all", "path": "/instances", "shared": true});
    let refused = problem(create_as(&app, &viewer, shared).await, 403).await;
    assert!(refused["detail"].as_str().unwrap().contains("operator"), "{refused}");
    assert_eq!(names_seen_by(&app, &viewer).await, ["watch"]);
}

async fn names_and_paths_that_cannot_be_saved_are_refused_naming_the_field(app: TestApp) {
    let long = "n".repeat(101);
    let far = format!("/instances?status={}", "x".repeat(2000));
    let cases = [
        (json!({"name": "   ", "path": "/instances"}), "name"),
        (json!({"name": long, "path": "/instances"}), "name"),
        (json!({"name": "tab\there", "path": "/instances"}), "name"),
        (json!({"name": "evil", "path": "//evil.example/instances"}), "path"),
        (json!({"name": "evil", "path": "https://evil.example/instances?x=1"}), "path"),
        (json!({"name": "evil", "path": "/instances.evil.example"}), "path"),
        (json!({"name": "evil", "path": "/workflows"}), "path"),
        (json!({"name": "evil", "path": "/instances?\\evil"}), "path"),
        (json!({"name": "evil", "path": "instances"}), "path"),
        (json!({"name": "evil", "path": far}), "path"),
    ];
    for (body, field) in cases {
        let answer = problem(app.post("/api/v1/views").json(&body).send().await.unwrap(), 422).await;
        assert_eq!(answer["errors"][0]["path"], field, "{body} → {answer}");
    }
    let body = json!({"name": "twice", "path": "/instances"});
    assert_eq!(app.post("/api/v1/views").json(&body).send().await.unwrap().status(), 201);
    let again = problem(app.post("/api/v1/views").json(&body).send().await.unwrap(), 409).await;
    assert!(again["detail"].as_str().unwrap().contains("twice"), "{again}");
    // A name of exactly 100 characters, counted as characters, fits.
    let fits =
        json!({"name": "é".repeat(100), "path": "/instances?input.order=4411&status=failed,timed_out&job=x&limit=50"});
    assert_eq!(app.post("/api/v1/views").json(&fits).send().await.unwrap().status(), 201);
    problem(app.post("/api/v1/views").json(&json!({"name": "x"})).send().await.unwrap(), 422).await;
    problem(app.as_admin(delete(&app, "not-a-uuid")).send().await.unwrap(), 400).await;
}

async fn a_deleted_users_private_views_go_with_it_and_shared_ones_stay(app: TestApp) {
    let alice = app.token_for("operator").await;
    let private: Value =
        create_as(&app, &alice, json!({"name": "mine", "path": "/instances"})).await.json().await.unwrap();
    let shared = json!({"name": "team", "path": "/instances?status=failed", "shared": true});
    let shared: Value = create_as(&app, &alice, shared).await.json().await.unwrap();
    let users: Value = app.get("/api/v1/users").send().await.unwrap().json().await.unwrap();
    let users = users["items"].as_array().unwrap();
    let id = users.iter().find(|u| u["username"] == "operator-user").unwrap()["id"].as_str().unwrap();
    let gone = app.as_admin(app.client.delete(app.url(&format!("/api/v1/users/{id}")))).send().await.unwrap();
    assert_eq!(gone.status(), 204);

    // No one could see the private view any more: it is gone (an admin, who may delete any
    // view by id, finds nothing); the shared one stays in everyone's list.
    problem(app.as_admin(delete(&app, private["id"].as_str().unwrap())).send().await.unwrap(), 404).await;
    assert_eq!(names_seen_by(&app, &app.token_for("viewer").await).await, ["team"]);
    assert_eq!(shared["owner"]["name"], "operator-user");
}

async fn one_owner_keeps_at_most_a_hundred_views(app: TestApp) {
    for n in 0..100 {
        let body = json!({"name": format!("view {n:03}"), "path": "/instances"});
        assert_eq!(app.post("/api/v1/views").json(&body).send().await.unwrap().status(), 201, "{n}");
    }
    let over = json!({"name": "one more", "path": "/instances"});
    let refused = problem(app.post("/api/v1/views").json(&over).send().await.unwrap(), 409).await;
    assert!(refused["detail"].as_str().unwrap().contains("delete one first"), "{refused}");
    let others = app.token_for("editor").await;
    assert_eq!(create_as(&app, &others, over).await.status(), 201, "the bound is per owner");
}

both_backends!(
    a_deleted_users_private_views_go_with_it_and_shared_ones_stay,
    one_owner_keeps_at_most_a_hundred_views,
    a_view_is_created_listed_by_name_and_deleted,
    another_user_sees_shared_views_but_not_private_ones_and_cannot_delete_them,
    viewers_keep_private_views_but_cannot_share_them,
    names_and_paths_that_cannot_be_saved_are_refused_naming_the_field
);
