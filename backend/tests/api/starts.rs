//! Idempotent starts: a retried request with the same Idempotency-Key creates nothing new.

use crate::common::{both_backends, problem, TestApp};
use serde_json::{json, Value};

async fn a_repeated_start_returns_the_first_answer_and_a_changed_one_is_refused(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})).await;
    let start = |body: Value| {
        app.post(&format!("/api/v1/workflows/{wf}/instances")).header("idempotency-key", "order-17").json(&body)
    };
    let first = start(json!({"input": {"n": 1}})).send().await.unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    let again = start(json!({"input": {"n": 1}})).send().await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.json::<Value>().await.unwrap(), first, "the first answer, again");
    problem(start(json!({"input": {"n": 2}})).send().await.unwrap(), 422).await;
    let listed: Value =
        app.get(&format!("/api/v1/instances?workflow={wf}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let long = app
        .post(&format!("/api/v1/workflows/{wf}/instances"))
        .header("idempotency-key", "k".repeat(300))
        .send()
        .await
        .unwrap();
    problem(long, 400).await;
}

async fn concurrent_starts_sharing_a_key_create_exactly_one_instance(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let starts = (0..40).map(|_| {
        let request =
            app.post(&format!("/api/v1/workflows/{wf}/instances")).header("idempotency-key", "same").json(&json!({}));
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 201);
            response.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
        }
    });
    let ids = crate::drafts::futures_join_all(starts).await;
    assert!(ids.iter().all(|id| id == &ids[0]), "every caller got the one instance");
    let listed: Value =
        app.get(&format!("/api/v1/instances?workflow={wf}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
}
/// A keyed start a full limit refuses keeps no claim on its key: sent again once there is
/// room, it starts.
async fn a_refused_keyed_start_leaves_its_key_free(app: TestApp) {
    let settings = json!({"max_concurrent_instances": 1, "on_limit": "reject"});
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}], "settings": settings})).await;
    let start = |key: &str| {
        app.post(&format!("/api/v1/workflows/{wf}/instances")).header("idempotency-key", key).json(&json!({}))
    };
    let holder = start("holder").send().await.unwrap();
    assert_eq!(holder.status(), 201);
    let holder = holder.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    problem(start("later").send().await.unwrap(), 429).await;
    let signal = app.signal(&holder, json!({"node": "hold"})).await;
    assert!(signal.status().is_success());
    app.wait_for(&holder, |i| i.summary.status.is_terminal()).await;
    let later = start("later").send().await.unwrap();
    assert_eq!(later.status(), 201, "the refused start's key was not kept");
}

both_backends!(
    a_refused_keyed_start_leaves_its_key_free,
    a_repeated_start_returns_the_first_answer_and_a_changed_one_is_refused,
    concurrent_starts_sharing_a_key_create_exactly_one_instance
);
