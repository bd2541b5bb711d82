//! Shared limits (`/api/v1/limits`): a concurrency and a rate that `http` nodes (and a map's
//! items) naming the limit are held to across workflows and processes, a 429 with
//! `Retry-After` pausing the whole limit, what holds a node back named on its instance, and a
//! limit deleted while nodes wait for it letting them go on.

use crate::common::{both_backends, node, problem, Backend, TestApp};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trellis_model::{InstanceStatus, NodeStatus};

/// A loopback API that records when each request arrived and how many ran at once.
/// `/slow` takes 300 ms; `/busy` answers 429 with `Retry-After: 2` to its first request;
/// `/block` waits until `release` is notified.
#[derive(Default)]
struct Api {
    arrivals: Mutex<Vec<(Instant, String)>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    busy_answers: AtomicUsize,
    release: tokio::sync::Notify,
}

async fn api() -> (String, Arc<Api>) {
    let api = Arc::new(Api::default());
    let app = Router::new().route("/{*path}", any(answer)).with_state(api.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, api)
}

async fn answer(State(api): State<Arc<Api>>, Path(path): Path<String>) -> (StatusCode, HeaderMap, &'static str) {
    api.arrivals.lock().unwrap().push((Instant::now(), path.clone()));
    let now = api.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    api.most_in_flight.fetch_max(now, Ordering::SeqCst);
    let mut headers = HeaderMap::new();
    let status = match path.as_str() {
        "slow" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            StatusCode::OK
        }
        "block" => {
            api.release.notified().await;
            StatusCode::OK
        }
        "busy" if api.busy_answers.fetch_add(1, Ordering::SeqCst) == 0 => {
            headers.insert("retry-after", "2".parse().unwrap());
            StatusCode::TOO_MANY_REQUESTS
        }
        _ => StatusCode::OK,
    };
    api.in_flight.fetch_sub(1, Ordering::SeqCst);
    (status, headers, "{}")
}

async fn make_limit(app: &TestApp, body: Value) -> Value {
    let response = app.post("/api/v1/limits").json(&body).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 201, "{}", response.text().await.unwrap());
    response.json().await.unwrap()
}

fn calling(url: &str, limit: &str) -> Value {
    json!({"nodes": [{"id": "call", "type": "http", "limit": limit, "config": {"method": "GET", "url": url}}]})
}

async fn run_all(app: &TestApp, wf: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(app.start(wf, json!({"input": {"i": i}})).await);
    }
    ids
}

async fn all_succeed_in_one_attempt(app: &TestApp, ids: &[String]) {
    for id in ids {
        let done = app.wait_finished(id).await;
        assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{id}: {:?}", node(&done, "call").error);
        assert_eq!(node(&done, "call").attempts, 1, "waiting for the limit counts no attempt");
    }
}

async fn limits_are_made_read_changed_and_deleted_with_clear_refusals(app: TestApp) {
    let made =
        make_limit(&app, json!({"name": "stripe-api", "concurrency": 3, "rate": {"limit": 20, "period_ms": 1000}}))
            .await;
    assert_eq!(made["concurrency"], 3);
    assert_eq!(made["rate"], json!({"limit": 20, "period_ms": 1000}));
    assert_eq!(
        (made["in_use"].clone(), made["waiting"].clone(), made["rate_used"].clone()),
        (json!(0), json!(0), json!(0))
    );
    let again = app.post("/api/v1/limits").json(&json!({"name": "stripe-api", "concurrency": 1})).send().await.unwrap();
    problem(again, 409).await;
    for (body, path) in [
        (json!({"name": "x", "concurrency": 0}), "concurrency"),
        (json!({"name": "x"}), "concurrency"),
        (json!({"name": "x", "rate": {"limit": 5, "period_ms": 0}}), "rate.period_ms"),
        (json!({"name": "x", "rate": {"limit": 0, "period_ms": 1000}}), "rate.limit"),
        (json!({"name": "no spaces", "concurrency": 1}), "name"),
    ] {
        let body = problem(app.post("/api/v1/limits").json(&body).send().await.unwrap(), 422).await;
        assert_eq!(body["errors"][0]["path"], path, "{body}");
    }
    let viewer = app.token_for("viewer").await;
    let refused = app.client.post(app.url("/api/v1/limits")).bearer_auth(&viewer);
    problem(refused.json(&json!({"name": "mine", "concurrency": 1})).send().await.unwrap(), 403).await;
    let seen = app.client.get(app.url("/api/v1/limits")).bearer_auth(&viewer).send().await.unwrap();
    let listed: Value = seen.json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");

    let changed = app.put("/api/v1/limits/stripe-api").json(&json!({"concurrency": 5})).send().await.unwrap();
    assert_eq!(changed.status().as_u16(), 200);
    let changed: Value = changed.json().await.unwrap();
    assert_eq!((changed["concurrency"].clone(), changed["rate"].clone()), (json!(5), Value::Null));
    let renamed = app.put("/api/v1/limits/stripe-api").json(&json!({"name": "other", "concurrency": 5}));
    problem(renamed.send().await.unwrap(), 422).await;
    problem(app.put("/api/v1/limits/nope").json(&json!({"concurrency": 1})).send().await.unwrap(), 404).await;
    let gone = app.as_admin(app.client.delete(app.url("/api/v1/limits/stripe-api"))).send().await.unwrap();
    assert_eq!(gone.status().as_u16(), 204);
    problem(app.get("/api/v1/limits/stripe-api").send().await.unwrap(), 404).await;
    problem(app.as_admin(app.client.delete(app.url("/api/v1/limits/stripe-api"))).send().await.unwrap(), 404).await;
}

async fn publishing_refuses_a_limit_that_does_not_exist_or_a_node_that_takes_none(app: TestApp) {
    let created = app
        .create_workflow(json!({"name": "needs a limit", "definition": calling("http://127.0.0.1:9/x", "missing-api")}))
        .await;
    let id = created.summary.id;
    let body = problem(app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap(), 422).await;
    let issue = body["errors"].as_array().unwrap().iter().find(|e| e["code"] == "unknown_limit").expect("named");
    assert_eq!(issue["path"], "nodes[0].limit");
    assert!(issue["message"].as_str().unwrap().contains("missing-api"), "{issue}");
    make_limit(&app, json!({"name": "missing-api", "concurrency": 1})).await;
    let published = app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap();
    assert_eq!(published.status().as_u16(), 201, "publishes once the limit exists");

    let noop = json!({"nodes": [{"id": "a", "type": "noop", "limit": "missing-api"}]});
    let report: Value =
        app.post(&format!("/api/v1/workflows/{id}/validate")).json(&noop).send().await.unwrap().json().await.unwrap();
    assert_eq!(report["valid"], false);
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("takes no `limit`"), "{report}");
}

/// A definition may name a limit on every node: the names are asked about in several
/// statements (`api-550` sorts into the second), and only those no limit has are refused.
async fn publishing_checks_many_named_limits(app: TestApp) {
    make_limit(&app, json!({"name": "api-550", "concurrency": 1})).await;
    let nodes: Vec<Value> = (0..600)
        .map(|i| {
            let config = json!({"method": "GET", "url": "http://127.0.0.1:9/x"});
            json!({"id": format!("n{i}"), "type": "http", "limit": format!("api-{i}"), "config": config})
        })
        .collect();
    let created = app.create_workflow(json!({"name": "many limits", "definition": {"nodes": nodes}})).await;
    let id = created.summary.id;
    let body = problem(app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap(), 422).await;
    let unknown: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["code"] == "unknown_limit")
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(unknown.len(), 599, "every missing one named once");
    assert!(!unknown.contains(&"nodes[550].limit"), "the one that exists is not refused");
    assert!(unknown.contains(&"nodes[0].limit") && unknown.contains(&"nodes[599].limit"));
}

async fn a_concurrency_limit_holds_across_two_workflows(app: TestApp) {
    let (base, api) = api().await;
    make_limit(&app, json!({"name": "one-api", "concurrency": 2})).await;
    let first = app.publish(calling(&format!("{base}/slow"), "one-api")).await;
    let second = app.publish(calling(&format!("{base}/slow"), "one-api")).await;
    let mut ids = run_all(&app, &first, 4).await;
    ids.extend(run_all(&app, &second, 4).await);
    all_succeed_in_one_attempt(&app, &ids).await;
    assert_eq!(api.arrivals.lock().unwrap().len(), 8);
    assert!(api.most_in_flight.load(Ordering::SeqCst) <= 2, "{} at once", api.most_in_flight.load(Ordering::SeqCst));
    let listed: Value = app.get("/api/v1/limits/one-api").send().await.unwrap().json().await.unwrap();
    assert_eq!((listed["in_use"].clone(), listed["waiting"].clone()), (json!(0), json!(0)), "{listed}");
    assert_eq!(listed["used_by"].as_array().unwrap().len(), 2, "{listed}");
}

async fn a_rate_limit_spaces_calls_and_a_429_pauses_the_whole_limit(app: TestApp) {
    let (base, api) = api().await;
    make_limit(&app, json!({"name": "rated", "rate": {"limit": 3, "period_ms": 1000}})).await;
    let wf = app.publish(calling(&format!("{base}/fast"), "rated")).await;
    let ids = run_all(&app, &wf, 9).await;
    all_succeed_in_one_attempt(&app, &ids).await;
    let times: Vec<Instant> = api.arrivals.lock().unwrap().iter().map(|a| a.0).collect();
    assert_eq!(times.len(), 9);
    // A call is let through when its place is counted; it reaches the API a few ms later,
    // more for the first on a new connection: windows are judged 100 ms short of a second.
    for (i, t) in times.iter().enumerate() {
        let within = times[i..].iter().filter(|u| u.duration_since(*t) < Duration::from_millis(900)).count();
        assert!(within <= 3, "{within} calls within 900 ms of call {i}");
    }
    // 9 at 3 a second: the last window opens 2 s after the first.
    assert!(times[8].duration_since(times[0]) >= Duration::from_millis(1900), "{:?}", times[8] - times[0]);

    // The first call of `busy` is told to wait 2 s: no call under the limit reaches the API
    // before then, and the told attempt is made again, not failed.
    make_limit(&app, json!({"name": "touchy", "concurrency": 10})).await;
    let busy = app.publish(calling(&format!("{base}/busy"), "touchy")).await;
    let other = app.publish(calling(&format!("{base}/fast"), "touchy")).await;
    let told = app.start(&busy, json!({})).await;
    app.wait_for(&told, |_| api.busy_answers.load(Ordering::SeqCst) >= 1).await;
    let paused_at = Instant::now();
    let paused = async {
        loop {
            let limit: Value = app.get("/api/v1/limits/touchy").send().await.unwrap().json().await.unwrap();
            if limit["paused_until"].is_string() {
                return limit;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(2), paused).await.expect("the 429 paused the limit");
    let later = app.start(&other, json!({})).await;
    let done = app.wait_finished(&told).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    assert_eq!(node(&done, "call").attempts, 1, "the 429 put the attempt back");
    assert_eq!(app.wait_finished(&later).await.summary.status, InstanceStatus::Succeeded);
    let after: Vec<Instant> = api.arrivals.lock().unwrap().iter().filter(|a| a.0 > paused_at).map(|a| a.0).collect();
    assert_eq!(after.len(), 2, "the retried call and the other workflow's");
    for t in after {
        assert!(t.duration_since(paused_at) >= Duration::from_millis(1800), "a call during the pause");
    }
}

async fn a_waiting_node_is_named_and_goes_on_unlimited_when_its_limit_is_deleted(app: TestApp) {
    let (base, api) = api().await;
    make_limit(&app, json!({"name": "single", "concurrency": 1})).await;
    let blocking = app.publish(calling(&format!("{base}/block"), "single")).await;
    let quick = app.publish(calling(&format!("{base}/fast"), "single")).await;
    let holder = app.start(&blocking, json!({})).await;
    app.wait_for(&holder, |_| api.in_flight.load(Ordering::SeqCst) == 1).await;
    let waiter = app.start(&quick, json!({})).await;
    let held = app.wait_for(&waiter, |i| i.held_by.as_ref().is_some_and(|h| h.kind == "limit")).await;
    let hold = held.held_by.clone().unwrap();
    assert_eq!((hold.name.as_deref(), hold.node.as_deref(), hold.position), (Some("single"), Some("call"), Some(1)));
    assert_eq!(node(&held, "call").status, NodeStatus::Running);
    let limit: Value = app.get("/api/v1/limits/single").send().await.unwrap().json().await.unwrap();
    assert_eq!((limit["in_use"].clone(), limit["waiting"].clone()), (json!(1), json!(1)), "{limit}");
    // A second waiter, second in line; the list counts every limit's places in one statement,
    // and each limit gets its own (held and waiting apart).
    let second = app.start(&quick, json!({})).await;
    let behind = app.wait_for(&second, |i| i.held_by.as_ref().is_some_and(|h| h.kind == "limit")).await;
    assert_eq!(behind.held_by.unwrap().position, Some(2));
    make_limit(&app, json!({"name": "idle", "concurrency": 3})).await;
    let listed: Value = app.get("/api/v1/limits").send().await.unwrap().json().await.unwrap();
    let counts = |name: &str| {
        let item = listed["items"].as_array().unwrap().iter().find(|l| l["name"] == name).expect("listed");
        (item["in_use"].clone(), item["waiting"].clone())
    };
    assert_eq!((counts("single"), counts("idle")), ((json!(1), json!(2)), (json!(0), json!(0))), "{listed}");

    let gone = app.as_admin(app.client.delete(app.url("/api/v1/limits/single"))).send().await.unwrap();
    assert_eq!(gone.status().as_u16(), 204);
    for waiting in [&waiter, &second] {
        let done = app.wait_finished(waiting).await;
        assert_eq!(done.summary.status, InstanceStatus::Succeeded, "went on without the limit");
    }
    assert_eq!(api.in_flight.load(Ordering::SeqCst), 1, "while the first still holds its call");
    api.release.notify_waiters();
    assert_eq!(app.wait_finished(&holder).await.summary.status, InstanceStatus::Succeeded);
}

async fn a_maps_items_share_the_limit(app: TestApp) {
    let (base, api) = api().await;
    make_limit(&app, json!({"name": "items", "concurrency": 2})).await;
    let map = json!({"nodes": [{"id": "each", "type": "map", "config": {
        "items": "[1, 2, 3, 4, 5, 6]", "max_parallel": 6,
        "node": {"type": "http", "limit": "items", "config": {"method": "GET", "url": format!("{base}/slow")}}}}]});
    let wf = app.publish(map).await;
    let id = app.start(&wf, json!({})).await;
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
    assert_eq!(api.arrivals.lock().unwrap().len(), 6);
    assert_eq!(api.most_in_flight.load(Ordering::SeqCst), 2, "two at a time, no more");
}

both_backends!(
    limits_are_made_read_changed_and_deleted_with_clear_refusals,
    publishing_refuses_a_limit_that_does_not_exist_or_a_node_that_takes_none,
    publishing_checks_many_named_limits,
    a_concurrency_limit_holds_across_two_workflows,
    a_rate_limit_spaces_calls_and_a_429_pauses_the_whole_limit,
    a_waiting_node_is_named_and_goes_on_unlimited_when_its_limit_is_deleted,
    a_maps_items_share_the_limit,
);

/// Three processes on one Postgres run one workflow's calls: the limit is the database's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_holds_across_three_processes() {
    let first = TestApp::spawn(Backend::Postgres).await;
    let (second, third) = (first.spawn_peer().await, first.spawn_peer().await);
    let (base, api) = api().await;
    make_limit(&first, json!({"name": "shared", "concurrency": 2})).await;
    let wf = first.publish(calling(&format!("{base}/slow"), "shared")).await;
    let mut ids = Vec::new();
    for (n, app) in [&first, &second, &third].iter().cycle().take(9).enumerate() {
        ids.push(app.start(&wf, json!({"input": {"n": n}})).await);
    }
    all_succeed_in_one_attempt(&first, &ids).await;
    assert_eq!(api.arrivals.lock().unwrap().len(), 9);
    assert!(api.most_in_flight.load(Ordering::SeqCst) <= 2, "{} at once", api.most_in_flight.load(Ordering::SeqCst));
}
