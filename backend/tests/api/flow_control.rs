//! Flow control over time: a workflow's `throttle` (at most `limit` starts per `period_ms`,
//! the others wait in order, none dropped) and `rate_limit` (starts past it refused with 429
//! and `Retry-After`, nothing created), per key, across processes, with what holds a waiting
//! instance named.

use crate::common::{both_backends, problem, TestApp};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use trellis_model::api::{QueuePlace, Started};
use trellis_model::InstanceStatus;

fn noop_with(settings: Value) -> Value {
    json!({"nodes": [{"id": "a", "type": "noop"}], "settings": settings})
}

async fn start(app: &TestApp, wf: &str, input: Value) -> reqwest::Response {
    app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({ "input": input })).send().await.unwrap()
}

async fn started(app: &TestApp, wf: &str, input: Value) -> Started {
    let response = start(app, wf, input).await;
    assert_eq!(response.status().as_u16(), 201, "start refused: {}", response.text().await.unwrap());
    response.json().await.unwrap()
}

/// When each instance was admitted, oldest first.
async fn admissions(app: &TestApp, ids: &[String]) -> Vec<DateTime<Utc>> {
    let mut times = Vec::new();
    for id in ids {
        let done = app.wait_finished(id).await;
        assert_eq!(done.summary.status, InstanceStatus::Succeeded);
        times.push(done.summary.started_at.expect("started"));
    }
    times.sort();
    times
}

/// The most admissions any span of `period_ms` holds (a window starting at each admission).
fn busiest_window(times: &[DateTime<Utc>], period_ms: i64) -> usize {
    let period = chrono::Duration::milliseconds(period_ms);
    (0..times.len()).map(|i| times[i..].iter().take_while(|t| **t - times[i] < period).count()).max().unwrap_or(0)
}

async fn rate_limit_refuses_past_its_limit_with_retry_after_and_creates_nothing(app: TestApp) {
    let wf = app.publish(noop_with(json!({"rate_limit": {"limit": 3, "period_ms": 60_000}}))).await;
    for _ in 0..3 {
        started(&app, &wf, json!({})).await;
    }
    for _ in 0..2 {
        let refused = start(&app, &wf, json!({})).await;
        let retry_after: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
        let body = problem(refused, 429).await;
        assert!(body["detail"].as_str().unwrap().contains("rate_limit of 3 per 1 min"), "{body}");
    }
    let listed: Value =
        app.get(&format!("/api/v1/instances?workflow={wf}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 3, "refused starts created nothing: {listed}");
    let metrics = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    let refused = metrics
        .lines()
        .find(|l| l.starts_with("trellis_flow_control_total") && l.contains(&wf) && l.contains("rate_limit"))
        .unwrap_or_else(|| panic!("no refusal counted:\n{metrics}"));
    assert!(refused.ends_with(" 2"), "{refused}");
}

async fn a_keyed_rate_limit_counts_each_key_apart_and_refuses_a_start_without_one(app: TestApp) {
    let wf = app.publish(noop_with(json!({"rate_limit": {"limit": 1, "period_ms": 60_000, "key": "input.k"}}))).await;
    started(&app, &wf, json!({"k": "a"})).await;
    started(&app, &wf, json!({"k": "b"})).await;
    let body = problem(start(&app, &wf, json!({"k": "a"})).await, 429).await;
    assert!(body["detail"].as_str().unwrap().contains("input.k = \"a\""), "{body}");
    let body = problem(start(&app, &wf, json!({})).await, 422).await;
    assert!(body["detail"].as_str().unwrap().contains("rate_limit.key"), "{body}");
}

async fn a_throttle_spreads_starts_over_its_windows_in_order_dropping_none(app: TestApp) {
    let wf = app.publish(noop_with(json!({"throttle": {"limit": 3, "period_ms": 1000}}))).await;
    let mut ids = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let s = started(&app, &wf, json!({})).await;
        statuses.push(s.status);
        ids.push(s.id);
    }
    assert_eq!(&statuses[..3], [InstanceStatus::Running; 3]);
    assert!(statuses[3..].iter().all(|s| *s == InstanceStatus::Queued), "{statuses:?}");
    // The next in line says the throttle holds it and when its window opens.
    let place: QueuePlace =
        app.get(&format!("/api/v1/instances/{}/queue", ids[3])).send().await.unwrap().json().await.unwrap();
    let hold = place.held_by.expect("held");
    assert_eq!((hold.limit.as_str(), hold.value, hold.running), ("throttle", Some(3), 3));
    assert!(hold.until.is_some(), "{hold:?}");
    assert_eq!(place.position, Some(1));
    let detail = app.instance_json(&ids[4]).await;
    assert_eq!(detail["held_by"]["kind"], "throttle", "{detail}");
    assert_eq!(detail["held_by"]["position"], 2, "{detail}");

    let times = admissions(&app, &ids).await;
    assert_eq!(times.len(), 8, "none dropped");
    assert!(busiest_window(&times, 1000) <= 3, "more than 3 in a second: {times:?}");
    // In order: admitted as they arrived.
    let mut in_order = Vec::new();
    for id in &ids {
        in_order.push(app.instance(id).await.summary.started_at.unwrap());
    }
    assert!(in_order.windows(2).all(|w| w[0] <= w[1]), "{in_order:?}");
    assert!(app.instance_json(&ids[4]).await["held_by"].is_null(), "nothing holds a finished instance");
}

async fn a_keyed_throttle_holds_each_key_apart(app: TestApp) {
    let wf = app.publish(noop_with(json!({"throttle": {"limit": 1, "period_ms": 1500, "key": "input.k"}}))).await;
    let a1 = started(&app, &wf, json!({"k": "a"})).await;
    let a2 = started(&app, &wf, json!({"k": "a"})).await;
    let b1 = started(&app, &wf, json!({"k": "b"})).await;
    assert_eq!(
        [a1.status, a2.status, b1.status],
        [InstanceStatus::Running, InstanceStatus::Queued, InstanceStatus::Running]
    );
    let held = app.instance_json(&a2.id).await;
    assert_eq!(held["held_by"]["key"], "a", "{held}");
    let times = admissions(&app, &[a1.id, a2.id]).await;
    assert!(times[1] - times[0] >= chrono::Duration::milliseconds(1500), "{times:?}");
}

async fn flow_control_settings_out_of_range_are_refused_at_their_fields(app: TestApp) {
    for (settings, path) in [
        (json!({"throttle": {"limit": 3, "period_ms": 0}}), "settings.throttle.period_ms"),
        (json!({"throttle": {"limit": 0, "period_ms": 1000}}), "settings.throttle.limit"),
        (json!({"rate_limit": {"limit": 5, "period_ms": 1000, "key": "input.("}}), "settings.rate_limit.key"),
    ] {
        let created = app.create_workflow(json!({"name": "bad", "definition": noop_with(settings)})).await;
        let published = app.post(&format!("/api/v1/workflows/{}/versions", created.summary.id)).send().await.unwrap();
        let body = problem(published, 422).await;
        let paths: Vec<&str> = body["errors"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect();
        assert!(paths.contains(&path), "{path} not named: {body}");
    }
    // A negative limit is not a number of starts at all.
    let negative = noop_with(json!({"rate_limit": {"limit": -1, "period_ms": 1000}}));
    let refused =
        app.post("/api/v1/workflows").json(&json!({"name": "neg", "definition": negative})).send().await.unwrap();
    let body = problem(refused, 422).await;
    assert!(body.to_string().contains("limit"), "{body}");
}

async fn on_limit_replace_cancels_the_oldest_competing_instance_and_runs(app: TestApp) {
    let held = |settings: Value| json!({"nodes": [{"id": "hold", "type": "wait_signal"}], "settings": settings});
    let wf = app.publish(held(json!({"max_concurrent_instances": 2, "on_limit": "replace"}))).await;
    let first = started(&app, &wf, json!({})).await;
    let second = started(&app, &wf, json!({})).await;
    let third = started(&app, &wf, json!({})).await;
    assert_eq!(third.status, InstanceStatus::Running, "the newest runs");
    assert_eq!(app.wait_finished(&first.id).await.summary.status, InstanceStatus::Canceled, "the oldest made room");
    assert_eq!(app.instance(&second.id).await.summary.status, InstanceStatus::Running);

    // Under a full key, the key's oldest goes, not another key's.
    let keyed = app.publish(held(json!({"concurrency_key": "input.k", "on_limit": "replace"}))).await;
    let a = started(&app, &keyed, json!({"k": "a"})).await;
    let b = started(&app, &keyed, json!({"k": "b"})).await;
    let a2 = started(&app, &keyed, json!({"k": "a"})).await;
    assert_eq!(a2.status, InstanceStatus::Running);
    assert_eq!(app.wait_finished(&a.id).await.summary.status, InstanceStatus::Canceled);
    assert_eq!(app.instance(&b.id).await.summary.status, InstanceStatus::Running);
}

async fn priority_admits_higher_levels_first_in_arrival_order_within_a_level(app: TestApp) {
    let settings = json!({"max_concurrent_instances": 1, "priority": "input.p"});
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}], "settings": settings})).await;
    let running = started(&app, &wf, json!({"p": 3})).await;
    let mut low = Vec::new();
    for _ in 0..3 {
        low.push(started(&app, &wf, json!({"p": 1})).await.id);
    }
    let high: Vec<String> =
        [started(&app, &wf, json!({"p": 5})).await.id, started(&app, &wf, json!({"p": 5})).await.id].into();
    // The later, higher start is first in line.
    let detail = app.instance_json(&high[0]).await;
    assert_eq!(detail["held_by"]["kind"], "max_concurrent_instances", "{detail}");
    assert_eq!(detail["held_by"]["position"], 1, "{detail}");
    let mut order = vec![running.id];
    let expected: Vec<String> = high.iter().chain(&low).cloned().collect();
    for next in &expected {
        let current = order.last().unwrap().clone();
        assert!(app.signal(&current, json!({"node": "hold"})).await.status().is_success());
        app.wait_for(next, |i| i.summary.status == InstanceStatus::Running).await;
        order.push(next.clone());
    }
    // A level outside 1-5 refuses the start, naming the setting.
    let body = problem(start(&app, &wf, json!({"p": 9})).await, 422).await;
    assert!(body["detail"].as_str().unwrap().contains("priority"), "{body}");
}

/// Every start of a burst is answered the same id; the instance is made once, a period after
/// the burst's last start, with that start's input.
async fn a_debounced_burst_makes_one_instance_per_key_with_the_last_input(app: TestApp) {
    let wf = app.publish(noop_with(json!({"debounce": {"period_ms": 400, "key": "input.k"}}))).await;
    let mut answers = Vec::new();
    for n in 0..5 {
        for k in ["a", "b"] {
            let response = start(&app, &wf, json!({"k": k, "n": n})).await;
            assert_eq!(response.status().as_u16(), 201);
            answers.push((k, response.json::<Value>().await.unwrap()));
        }
    }
    let last_start = Utc::now();
    assert!(answers.iter().all(|(_, a)| a["debounced"] == true && a["status"] == "queued"), "{answers:?}");
    let id_of = |key: &str| -> Vec<String> {
        answers.iter().filter(|(k, _)| *k == key).map(|(_, a)| a["id"].as_str().unwrap().to_owned()).collect()
    };
    let (a, b) = (id_of("a"), id_of("b"));
    assert!(a.iter().all(|id| *id == a[0]) && b.iter().all(|id| *id == b[0]) && a[0] != b[0], "{answers:?}");
    // While it gathers, the id is already an instance to look at: queued, held by the debounce.
    let gathering = app.instance_json(&a[0]).await;
    assert_eq!(gathering["status"], "queued", "{gathering}");
    assert_eq!((gathering["held_by"]["kind"].as_str(), &gathering["held_by"]["key"]), (Some("debounce"), &json!("a")));
    let place: QueuePlace =
        app.get(&format!("/api/v1/instances/{}/queue", a[0])).send().await.unwrap().json().await.unwrap();
    let hold = place.held_by.expect("the debounce holds it");
    assert_eq!((hold.limit.as_str(), hold.running, hold.key_value), ("debounce", 5, Some(json!("a"))));
    for (id, key) in [(&a[0], "a"), (&b[0], "b")] {
        let done = app.wait_finished(id).await;
        assert_eq!(done.summary.status, InstanceStatus::Succeeded);
        assert_eq!(done.input, json!({"k": key, "n": 4}), "the last start's input");
        let quiet = done.summary.created_at - last_start;
        assert!(quiet >= chrono::Duration::milliseconds(350), "made {quiet:?} after the last start");
    }
    let listed: Value =
        app.get(&format!("/api/v1/instances?workflow={wf}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2, "one instance per key: {listed}");
}

/// Starts that never pause for a period still start an instance `max_wait_ms` after the first.
async fn max_wait_ends_a_burst_that_never_goes_quiet(app: TestApp) {
    let wf = app.publish(noop_with(json!({"debounce": {"period_ms": 300, "max_wait_ms": 600}}))).await;
    let first: Value = start(&app, &wf, json!({"n": 0})).await.json().await.unwrap();
    let first_id = first["id"].as_str().unwrap().to_owned();
    let mut ids = vec![first_id.clone()];
    for n in 1..15 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let answer: Value = start(&app, &wf, json!({ "n": n })).await.json().await.unwrap();
        ids.push(answer["id"].as_str().unwrap().to_owned());
    }
    // The starts kept coming every 100 ms for 1.4 s, yet the first burst ended by its bound
    // and later starts gathered into a burst of their own.
    assert!(ids.iter().any(|id| *id != first_id), "one burst for 1.4 s of starts: {ids:?}");
    let done = app.wait_finished(&first_id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
}

/// Limits together: an instance waiting for a throttle window holds no slot, so under
/// `on_limit: reject` a start with slots free is queued for the window, not refused; and
/// every start folded into a debounce burst is counted by the rate limit.
async fn limits_combine_without_refusing_what_has_room(app: TestApp) {
    let held =
        json!({"max_concurrent_instances": 5, "on_limit": "reject", "throttle": {"limit": 1, "period_ms": 60_000}});
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}], "settings": held})).await;
    let statuses =
        [started(&app, &wf, json!({})).await, started(&app, &wf, json!({})).await, started(&app, &wf, json!({})).await]
            .map(|s| s.status);
    assert_eq!(statuses, [InstanceStatus::Running, InstanceStatus::Queued, InstanceStatus::Queued]);

    let both = json!({"debounce": {"period_ms": 300}, "rate_limit": {"limit": 2, "period_ms": 60_000}});
    let wf = app.publish(noop_with(both)).await;
    let first = started(&app, &wf, json!({"n": 1})).await;
    let second = started(&app, &wf, json!({"n": 2})).await;
    assert!(first.debounced && second.debounced && first.id == second.id);
    problem(start(&app, &wf, json!({"n": 3})).await, 429).await;
    assert_eq!(app.wait_finished(&first.id).await.input, json!({"n": 2}), "the refused start changed nothing");
}

both_backends!(
    rate_limit_refuses_past_its_limit_with_retry_after_and_creates_nothing,
    a_keyed_rate_limit_counts_each_key_apart_and_refuses_a_start_without_one,
    a_throttle_spreads_starts_over_its_windows_in_order_dropping_none,
    a_keyed_throttle_holds_each_key_apart,
    flow_control_settings_out_of_range_are_refused_at_their_fields,
    on_limit_replace_cancels_the_oldest_competing_instance_and_runs,
    priority_admits_higher_levels_first_in_arrival_order_within_a_level,
    a_debounced_burst_makes_one_instance_per_key_with_the_last_input,
    max_wait_ends_a_burst_that_never_goes_quiet,
    limits_combine_without_refusing_what_has_room,
);

/// Three processes on one Postgres, starts sent to each in turn: the windows are the
/// database's, so no second holds more than the limit, and none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttle_holds_across_three_processes() {
    let first = TestApp::spawn(crate::common::Backend::Postgres).await;
    let (second, third) = (first.spawn_peer().await, first.spawn_peer().await);
    let apps = [&first, &second, &third];
    let wf = first.publish(noop_with(json!({"throttle": {"limit": 4, "period_ms": 500}}))).await;
    let starts = (0..24).map(|n| {
        let request = apps[n % 3].post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"input": {"n": n}}));
        async move { request.send().await.unwrap().json::<Started>().await.unwrap() }
    });
    let ids: Vec<String> = crate::drafts::futures_join_all(starts).await.into_iter().map(|s| s.id).collect();
    let times = admissions(&first, &ids).await;
    assert_eq!(times.len(), 24);
    assert!(busiest_window(&times, 500) <= 4, "more than 4 in 500 ms: {times:?}");
    // 24 at 4 per 500 ms: the last window opens 2.5 s after the first.
    let span = *times.last().unwrap() - times[0];
    assert!(span >= chrono::Duration::milliseconds(2500), "{span:?}");
}
