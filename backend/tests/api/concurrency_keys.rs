//! Concurrency keys: `settings.concurrency_key` with `max_per_key` limits how many instances
//! with the same key value run at once, FIFO per key, together with
//! `max_concurrent_instances`, and across processes.

use crate::common::{both_backends, problem, Backend, TestApp};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use trellis_model::api::{QueuePlace, Started};
use trellis_model::InstanceStatus;

/// A workflow whose instances wait for a signal at `hold`, keyed by `input.customer`.
fn held_per_customer(settings: Value) -> Value {
    let mut settings = settings;
    settings["concurrency_key"] = json!("input.customer");
    json!({"nodes": [{"id": "hold", "type": "wait_signal"}], "settings": settings})
}

async fn start_for(app: &TestApp, wf: &str, customer: Value) -> Started {
    let response = app
        .post(&format!("/api/v1/workflows/{wf}/instances"))
        .json(&json!({"input": {"customer": customer}}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "start refused: {}", response.text().await.unwrap());
    response.json().await.unwrap()
}

async fn status(app: &TestApp, id: &str) -> InstanceStatus {
    app.instance(id).await.summary.status
}

async fn release(app: &TestApp, id: &str) {
    let signaled =
        app.post(&format!("/api/v1/instances/{id}/signal")).json(&json!({"node": "hold"})).send().await.unwrap();
    assert!(signaled.status().is_success(), "{}", signaled.text().await.unwrap());
    app.wait_finished(id).await;
}

async fn queue_of(app: &TestApp, id: &str) -> QueuePlace {
    app.get(&format!("/api/v1/instances/{id}/queue")).send().await.unwrap().json().await.unwrap()
}

async fn instances_with_one_key_run_at_most_max_per_key_and_wait_in_line_per_key(app: TestApp) {
    let wf = app.publish(held_per_customer(json!({"max_per_key": 2}))).await;
    let acme: Vec<Started> = [
        start_for(&app, &wf, json!("acme")).await,
        start_for(&app, &wf, json!("acme")).await,
        start_for(&app, &wf, json!("acme")).await,
        start_for(&app, &wf, json!("acme")).await,
    ]
    .into();
    let statuses: Vec<_> = acme.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [InstanceStatus::Running, InstanceStatus::Running, InstanceStatus::Queued, InstanceStatus::Queued]
    );
    // Another key is not held back by acme's line.
    let globex = start_for(&app, &wf, json!("globex")).await;
    assert_eq!(globex.status, InstanceStatus::Running);

    let detail = app.instance(&acme[2].id).await;
    assert_eq!(detail.concurrency_key, Some(json!("acme")));
    let place = queue_of(&app, &acme[3].id).await;
    let hold = place.held_by.expect("the key holds it");
    assert_eq!((hold.limit.as_str(), hold.value, hold.running), ("max_per_key", Some(2), 2));
    assert_eq!((hold.key.as_deref(), hold.key_value), (Some("input.customer"), Some(json!("acme"))));
    assert_eq!((place.position, place.ahead), (Some(2), Some(1)), "second in acme's line, behind acme[2]");

    // Finishing one acme instance admits the oldest acme waiting: FIFO per key.
    release(&app, &acme[0].id).await;
    app.wait_for(&acme[2].id, |i| i.summary.status == InstanceStatus::Running).await;
    assert_eq!(status(&app, &acme[3].id).await, InstanceStatus::Queued);
    release(&app, &acme[1].id).await;
    app.wait_for(&acme[3].id, |i| i.summary.status == InstanceStatus::Running).await;
    assert_eq!(app.instance(&globex.id).await.concurrency_key, Some(json!("globex")));

    // The trace's queue wait names the limit and the key it waited for.
    let history: Value =
        app.get(&format!("/api/v1/instances/{}/history", acme[3].id)).send().await.unwrap().json().await.unwrap();
    let queue = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "span_start" && e["kind"] == "queue")
        .unwrap_or_else(|| panic!("a queue span in {history}"));
    assert_eq!(queue["name"], "queue wait: max_per_key");
    assert_eq!(queue["attributes"]["trellis.concurrency_key_value"], "acme");
    assert_eq!(queue["attributes"]["trellis.max_per_key"], 2);
}

async fn the_key_and_the_workflow_limit_hold_together_and_the_inspector_names_which(app: TestApp) {
    let wf = app.publish(held_per_customer(json!({"max_concurrent_instances": 2, "max_per_key": 1}))).await;
    let a1 = start_for(&app, &wf, json!("a")).await;
    let a2 = start_for(&app, &wf, json!("a")).await;
    // a2 waits for its key only, so b1 takes the workflow's second slot.
    let b1 = start_for(&app, &wf, json!("b")).await;
    let c1 = start_for(&app, &wf, json!("c")).await;
    let statuses = [a1.status, a2.status, b1.status, c1.status];
    assert_eq!(
        statuses,
        [InstanceStatus::Running, InstanceStatus::Queued, InstanceStatus::Running, InstanceStatus::Queued]
    );
    assert_eq!(queue_of(&app, &a2.id).await.held_by.unwrap().limit, "max_per_key");
    let c_hold = queue_of(&app, &c1.id).await.held_by.unwrap();
    assert_eq!((c_hold.limit.as_str(), c_hold.key), ("max_concurrent_instances", None));

    // b1's slot goes to c1: a2 is still held by a1.
    release(&app, &b1.id).await;
    app.wait_for(&c1.id, |i| i.summary.status == InstanceStatus::Running).await;
    assert_eq!(status(&app, &a2.id).await, InstanceStatus::Queued);
    release(&app, &a1.id).await;
    app.wait_for(&a2.id, |i| i.summary.status == InstanceStatus::Running).await;
}

async fn instances_held_by_their_key_never_keep_free_slots_from_other_keys(app: TestApp) {
    let v1 = held_per_customer(json!({"max_concurrent_instances": 2, "max_per_key": 1}));
    let wf = app.publish(v1.clone()).await;
    let x = start_for(&app, &wf, json!("x")).await;
    let y = start_for(&app, &wf, json!("y")).await;
    // The workflow is full: k1 waits for it; k2 and k3 wait behind k1 in k's line; z too.
    let k: Vec<Started> = [
        start_for(&app, &wf, json!("k")).await,
        start_for(&app, &wf, json!("k")).await,
        start_for(&app, &wf, json!("k")).await,
    ]
    .into();
    let z = start_for(&app, &wf, json!("z")).await;
    assert!([&k[0], &k[1], &k[2], &z].iter().all(|s| s.status == InstanceStatus::Queued));
    let z_place = queue_of(&app, &z.id).await;
    assert_eq!(z_place.held_by.unwrap().limit, "max_concurrent_instances");
    assert_eq!(z_place.ahead, Some(1), "only k1 is ahead of z: k2 and k3 wait for their key");

    // Three more slots at once (a new version): k1 and z take two; k2 and k3 still wait for k.
    let mut v2 = v1;
    v2["settings"]["max_concurrent_instances"] = json!(5);
    let saved =
        app.put(&format!("/api/v1/workflows/{wf}/draft")).header("if-match", "*").json(&v2).send().await.unwrap();
    assert!(saved.status().is_success(), "{}", saved.status());
    assert!(app.post(&format!("/api/v1/workflows/{wf}/versions")).send().await.unwrap().status().is_success());
    app.wait_for(&z.id, |i| i.summary.status == InstanceStatus::Running).await;
    app.wait_for(&k[0].id, |i| i.summary.status == InstanceStatus::Running).await;
    assert_eq!([status(&app, &k[1].id).await, status(&app, &k[2].id).await], [InstanceStatus::Queued; 2]);
    // A start of a new key runs at once: nothing that could run is waiting.
    assert_eq!(start_for(&app, &wf, json!("w")).await.status, InstanceStatus::Running);
    for done in [&x, &y] {
        release(&app, &done.id).await;
    }
}

async fn a_key_that_fails_is_null_or_not_a_scalar_refuses_the_start_and_creates_nothing(app: TestApp) {
    let wf = app.publish(held_per_customer(json!({}))).await;
    let starts = [
        (json!({}), "input.customer"),
        (json!({"customer": null}), "is null"),
        (json!({"customer": {"id": 1}}), "not an object"),
        (json!({"customer": ["a"]}), "not an array"),
        (json!({"customer": "x".repeat(600)}), "the limit is 512"),
    ];
    for (input, says) in starts {
        let refused =
            app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"input": input})).send().await.unwrap();
        let body = problem(refused, 422).await;
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains("concurrency_key") && detail.contains(says), "{input}: {detail}");
    }
    let listed: Value =
        app.get(&format!("/api/v1/instances?workflow={wf}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 0, "no refused start left an instance");

    // max_per_key defaults to 1, and the number 1 and the string "1" are different keys.
    let number = start_for(&app, &wf, json!(1)).await;
    let text = start_for(&app, &wf, json!("1")).await;
    let again = start_for(&app, &wf, json!(1)).await;
    assert_eq!(
        [number.status, text.status, again.status],
        [InstanceStatus::Running, InstanceStatus::Running, InstanceStatus::Queued]
    );
    assert_eq!(app.instance(&number.id).await.concurrency_key, Some(json!(1)));
}

async fn on_limit_reject_refuses_a_start_over_its_key_limit_with_429_naming_the_key(app: TestApp) {
    let wf = app.publish(held_per_customer(json!({"max_per_key": 1, "on_limit": "reject"}))).await;
    let first = start_for(&app, &wf, json!("acme")).await;
    assert_eq!(first.status, InstanceStatus::Running);
    let refused = app
        .post(&format!("/api/v1/workflows/{wf}/instances"))
        .json(&json!({"input": {"customer": "acme"}}))
        .send()
        .await
        .unwrap();
    let body = problem(refused, 429).await;
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("input.customer = \"acme\"") && detail.contains("max_per_key"), "{detail}");
    assert_eq!(start_for(&app, &wf, json!("globex")).await.status, InstanceStatus::Running);
    release(&app, &first.id).await;
    assert_eq!(start_for(&app, &wf, json!("acme")).await.status, InstanceStatus::Running);
}

async fn a_retried_instance_keeps_its_key_and_waits_for_it(app: TestApp) {
    // Each instance waits at `hold`, then fails.
    let wf = app.publish(json!({
        "nodes": [{"id": "hold", "type": "wait_signal"}, {"id": "boom", "type": "fail", "config": {"message": "no"}}],
        "edges": [{"from": "hold", "to": "boom"}],
        "settings": {"concurrency_key": "input.customer", "max_per_key": 1}
    })).await;
    let first = start_for(&app, &wf, json!("acme")).await;
    release(&app, &first.id).await;
    assert_eq!(status(&app, &first.id).await, InstanceStatus::Failed);
    let second = start_for(&app, &wf, json!("acme")).await;
    assert_eq!(second.status, InstanceStatus::Running);
    let retried = app
        .post(&format!("/api/v1/instances/{}/retry", first.id))
        .json(&json!({"from": "start"}))
        .send()
        .await
        .unwrap();
    assert!(retried.status().is_success(), "{}", retried.text().await.unwrap());
    assert_eq!(status(&app, &first.id).await, InstanceStatus::Queued, "acme's slot is taken by the second");
    release(&app, &second.id).await;
    app.wait_for(&first.id, |i| i.summary.status == InstanceStatus::Running).await;
}

async fn settings_that_misuse_keys_are_refused(app: TestApp) {
    for (settings, path) in [
        (json!({"max_per_key": 2}), "settings.max_per_key"),
        (json!({"concurrency_key": "input.(", "max_per_key": 2}), "settings.concurrency_key"),
        (json!({"concurrency_key": "input.customer", "max_per_key": 0}), "settings.max_per_key"),
    ] {
        let definition = json!({"nodes": [{"id": "a", "type": "noop"}], "settings": settings});
        let created = app
            .post("/api/v1/workflows")
            .json(&json!({"name": "keys", "definition": definition}))
            .send()
            .await
            .unwrap();
        // A draft may be saved with problems; publishing it is what must refuse.
        let refused = match created.status().as_u16() {
            201 => {
                let id = created.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
                app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap()
            }
            _ => created,
        };
        let body = problem(refused, 422).await;
        assert!(body.to_string().contains(path), "{settings}: {body}");
    }
}
both_backends!(
    instances_with_one_key_run_at_most_max_per_key_and_wait_in_line_per_key,
    the_key_and_the_workflow_limit_hold_together_and_the_inspector_names_which,
    instances_held_by_their_key_never_keep_free_slots_from_other_keys,
    a_key_that_fails_is_null_or_not_a_scalar_refuses_the_start_and_creates_nothing,
    on_limit_reject_refuses_a_start_over_its_key_limit_with_429_naming_the_key,
    a_retried_instance_keeps_its_key_and_waits_for_it,
    settings_that_misuse_keys_are_refused
);

/// Two processes on one Postgres start instances over three keys at once; sampled from the
/// database while they run, no key ever has more than `max_per_key` running.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_never_run_more_than_max_per_key_per_key() {
    let first = TestApp::spawn(Backend::Postgres).await;
    let second = first.spawn_peer().await;
    let wf = first
        .publish(json!({
            "nodes": [{"id": "work", "type": "delay", "config": {"duration_ms": 40}}],
            "settings": {"concurrency_key": "input.k", "max_per_key": 2}
        }))
        .await;
    let pool = sqlx::PgPool::connect(&first.database_url).await.unwrap();
    let peak = Arc::new(AtomicI64::new(0));
    let sampling = tokio::spawn(sample_running_per_key(pool, peak.clone()));
    let starts = (0..60).map(|n| {
        let app = if n % 2 == 0 { &first } else { &second };
        let request = app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"input": {"k": n % 3}}));
        async move { request.send().await.unwrap().json::<Started>().await.unwrap() }
    });
    let started = crate::drafts::futures_join_all(starts).await;
    for s in &started {
        assert_eq!(first.wait_finished(&s.id).await.summary.status, InstanceStatus::Succeeded);
    }
    sampling.abort();
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 2, "a key had {peak} instances running at once");
    assert_eq!(peak, 2, "the sampling saw a key's limit in use (so it could see an excess)");
}

/// Keeps in `peak` the most instances seen running at once for any one key, sampling every
/// few milliseconds until aborted.
async fn sample_running_per_key(pool: sqlx::PgPool, peak: Arc<AtomicI64>) {
    loop {
        let seen: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM instances WHERE status IN ('running', 'paused') \
             AND concurrency_key IS NOT NULL GROUP BY concurrency_key) per_key",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        peak.fetch_max(seen.unwrap_or(0), Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
}
