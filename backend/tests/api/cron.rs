//! Cron triggers: validation with what to fix, previews in the schedule's zone, firing,
//! pause, the `skip` overlap policy, and two processes firing each tick exactly once.

use crate::common::{both_backends, fresh_database, problem, Backend, TestApp};
use crate::process::Process;
use crate::webhooks::deliveries;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

async fn create_cron(app: &TestApp, workflow: &str, settings: Value) -> Value {
    let mut body = json!({"kind": "cron"});
    body.as_object_mut().unwrap().extend(settings.as_object().unwrap().clone());
    let response = app.post(&format!("/api/v1/workflows/{workflow}/triggers")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201, "create cron");
    response.json().await.unwrap()
}

async fn instances(app: &TestApp, workflow: &str) -> Vec<Value> {
    let list: Value = app
        .get(&format!("/api/v1/instances?workflow={workflow}&limit=500"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    list["items"].as_array().unwrap().clone()
}

/// Polls (at most 30 s) until `workflow` has at least `n` instances.
async fn wait_for_instances(app: &TestApp, workflow: &str, n: usize) -> Vec<Value> {
    for _ in 0..300 {
        let found = instances(app, workflow).await;
        if found.len() >= n {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} instances of {workflow} were started");
}

/// Simulates downtime: the schedule is live and its next tick is `at`, as if no process had
/// run since.
async fn rewind(app: &TestApp, trigger: &str, at: chrono::DateTime<chrono::Utc>) {
    let id: uuid::Uuid = trigger.parse().unwrap();
    let sql = "UPDATE triggers SET next_fire_at = $1, paused = $2 WHERE id = $3";
    if app.database_url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
        sqlx::query(sql).bind(at).bind(false).bind(id).execute(&pool).await.unwrap();
    } else {
        let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
        sqlx::query(sql).bind(at).bind(false).bind(id).execute(&pool).await.unwrap();
    }
}

/// Polls (at most 30 s) until the trigger's log satisfies `done`; returns the log.
async fn wait_for_log(app: &TestApp, trigger: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..300 {
        let log = deliveries(app, trigger).await;
        if done(&log) {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the log of trigger {trigger} never got there: {:?}", deliveries(app, trigger).await);
}

fn count(log: &[Value], outcome: &str) -> usize {
    log.iter().filter(|d| d["outcome"] == outcome).count()
}

async fn invalid_expressions_and_time_zones_are_422_saying_what_to_fix(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let create = |body: Value| app.post(&format!("/api/v1/workflows/{wf}/triggers")).json(&body).send();
    let both = problem(
        create(json!({"kind": "cron", "expression": "99 * * * *", "timezone": "Mars/Base"})).await.unwrap(),
        422,
    )
    .await;
    let paths: Vec<&str> = both["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["expression", "timezone"]);
    assert!(both["errors"][1]["message"].as_str().unwrap().contains("IANA"));
    let short = problem(create(json!({"kind": "cron", "expression": "* *"})).await.unwrap(), 422).await;
    assert!(short["errors"][0]["message"].as_str().unwrap().contains("5"));
    problem(create(json!({"kind": "cron"})).await.unwrap(), 422).await;
    problem(create(json!({"kind": "cron", "expression": "* * * * *", "overlap": "sometimes"})).await.unwrap(), 422)
        .await;
    problem(create(json!({"kind": "cron", "expression": "0 0 30 2 *"})).await.unwrap(), 422).await;
    let preview = app
        .post("/api/v1/triggers/preview")
        .json(&json!({"expression": "*/5 * * * *", "timezone": "Nope"}))
        .send()
        .await
        .unwrap();
    problem(preview, 422).await;
}

async fn previews_list_the_next_fire_times_in_the_zone(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let created =
        create_cron(&app, &wf, json!({"expression": "0 9 * * *", "timezone": "Europe/Berlin", "paused": true})).await;
    let times = created["next_fire_times"].as_array().unwrap();
    assert_eq!(times.len(), 5);
    assert!(created["next_fire_at"].is_null(), "paused: no next tick");
    for t in times {
        let t = t.as_str().unwrap();
        assert!(t.contains("T09:00:00") && (t.ends_with("+01:00") || t.ends_with("+02:00")), "{t}");
    }
    let id = created["id"].as_str().unwrap();
    let preview: Value =
        app.get(&format!("/api/v1/triggers/{id}/preview?count=3")).send().await.unwrap().json().await.unwrap();
    assert_eq!(preview["times"].as_array().unwrap().len(), 3);
    assert_eq!(preview["timezone"], "Europe/Berlin");
    problem(app.get(&format!("/api/v1/triggers/{id}/preview?count=0")).send().await.unwrap(), 400).await;
    let bad =
        app.patch(&format!("/api/v1/triggers/{id}")).json(&json!({"expression": "every day"})).send().await.unwrap();
    assert_eq!(problem(bad, 422).await["errors"][0]["path"], "expression");
    let moved: Value = app
        .patch(&format!("/api/v1/triggers/{id}"))
        .json(&json!({"timezone": "America/New_York", "name": "standup"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (moved["timezone"].as_str(), moved["expression"].as_str()),
        (Some("America/New_York"), Some("0 9 * * *"))
    );
    assert_eq!(moved["name"], "standup");
    let preview: Value =
        app.get(&format!("/api/v1/triggers/{id}/preview?count=1")).send().await.unwrap().json().await.unwrap();
    let t = preview["times"][0].as_str().unwrap();
    assert!(t.ends_with("-05:00") || t.ends_with("-04:00"), "{t}");
    let seconds: Value = app
        .post("/api/v1/triggers/preview")
        .json(&json!({"expression": "*/15 * * * * *", "count": 4}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let seconds: Vec<&str> = seconds["times"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(seconds.len(), 4);
    assert!(
        seconds.iter().all(|t| ["00+", "15+", "30+", "45+"].iter().any(|s| t.contains(&format!(":{s}")))),
        "{seconds:?}"
    );
    let webhook =
        app.post(&format!("/api/v1/workflows/{wf}/triggers")).json(&json!({"kind": "webhook"})).send().await.unwrap();
    let webhook = webhook.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    problem(app.get(&format!("/api/v1/triggers/{webhook}/preview")).send().await.unwrap(), 409).await;
}

async fn an_every_second_schedule_starts_instances_until_paused(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let created = create_cron(&app, &wf, json!({"expression": "* * * * * *", "overlap": "allow"})).await;
    let id = created["id"].as_str().unwrap();
    assert!(created["next_fire_at"].is_string());
    let fired = wait_for_instances(&app, &wf, 2).await;
    let input = app.instance(fired[0]["id"].as_str().unwrap()).await.input;
    assert_eq!(input["trigger_id"], id);
    assert!(input["scheduled_at"].is_string());
    let log = deliveries(&app, id).await;
    assert!(log
        .iter()
        .any(|d| d["outcome"] == "started" && d["instance_id"].is_string() && d["scheduled_at"].is_string()));
    let page: Value =
        app.get(&format!("/api/v1/triggers/{id}/deliveries?limit=1")).send().await.unwrap().json().await.unwrap();
    let cursor = page["next_cursor"].as_str().unwrap();
    let next: Value = app
        .get(&format!("/api/v1/triggers/{id}/deliveries?limit=1&cursor={cursor}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        next["items"][0]["id"].as_str().unwrap() < page["items"][0]["id"].as_str().unwrap(),
        "older entries on the next page"
    );
    let paused: Value = app
        .patch(&format!("/api/v1/triggers/{id}"))
        .json(&json!({"paused": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paused_by = chrono::Utc::now();
    assert!(paused["next_fire_at"].is_null());
    // A fire under way when the pause lands may still finish, but only with ticks due
    // before the pause; give such a fire, and any tick after the pause, time to show.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let settled = instances(&app, &wf).await;
    for instance in &settled {
        let input = app.instance(instance["id"].as_str().unwrap()).await.input;
        let tick: chrono::DateTime<chrono::Utc> = input["scheduled_at"].as_str().unwrap().parse().unwrap();
        assert!(tick <= paused_by, "tick {tick} fired after the pause");
    }
    let settled = settled.len();
    let resumed: Value = app
        .patch(&format!("/api/v1/triggers/{id}"))
        .json(&json!({"paused": false}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(resumed["next_fire_at"].is_string());
    wait_for_instances(&app, &wf, settled + 1).await;
}

async fn with_overlap_skip_a_tick_while_an_instance_runs_starts_nothing(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})).await;
    let created = create_cron(&app, &wf, json!({"expression": "* * * * * *", "overlap": "skip"})).await;
    let id = created["id"].as_str().unwrap();
    let mut skipped = false;
    for _ in 0..300 {
        if deliveries(&app, id).await.iter().any(|d| d["outcome"] == "skipped") {
            skipped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(skipped, "a later tick was skipped");
    app.patch(&format!("/api/v1/triggers/{id}")).json(&json!({"paused": true})).send().await.unwrap();
    assert_eq!(instances(&app, &wf).await.len(), 1, "one instance while it is still running");
}

async fn with_overlap_queue_one_one_tick_waits_for_the_running_instance(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})).await;
    let created = create_cron(&app, &wf, json!({"expression": "* * * * * *", "overlap": "queue_one"})).await;
    let id = created["id"].as_str().unwrap();
    let log = wait_for_log(&app, id, |log| count(log, "queued") == 1 && count(log, "skipped") >= 1).await;
    let queued = log.iter().find(|d| d["outcome"] == "queued").unwrap()["scheduled_at"].clone();
    let running = instances(&app, &wf).await;
    assert_eq!(running.len(), 1);
    let first = running[0]["id"].as_str().unwrap();
    let signal = app
        .post(&format!("/api/v1/instances/{first}/signal"))
        .json(&json!({"node": "hold", "payload": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(signal.status(), 200);
    let log = wait_for_log(&app, id, |log| count(log, "started") == 2).await;
    let second = log.iter().find(|d| d["outcome"] == "started").unwrap();
    assert_eq!(second["scheduled_at"], queued, "the waiting tick is the one that starts");
    app.patch(&format!("/api/v1/triggers/{id}")).json(&json!({"paused": true})).send().await.unwrap();
}

async fn after_downtime_missed_ticks_follow_the_catch_up_policy(app: TestApp) {
    use chrono::{Datelike, DurationRound, TimeZone, Utc};
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let new_year = Utc.with_ymd_and_hms(Utc::now().year(), 1, 1, 0, 0, 0).unwrap();
    let yearly = |catch_up: &str| json!({"expression": "0 0 1 1 *", "catch_up": catch_up, "paused": true});
    let none = create_cron(&app, &wf, yearly("none")).await["id"].as_str().unwrap().to_owned();
    let last = create_cron(&app, &wf, yearly("last")).await["id"].as_str().unwrap().to_owned();
    let every_minute = json!({"expression": "* * * * *", "catch_up": "all", "overlap": "allow", "paused": true});
    let all = create_cron(&app, &wf, every_minute).await["id"].as_str().unwrap().to_owned();
    rewind(&app, &none, new_year).await;
    rewind(&app, &last, new_year).await;
    let ten_minutes_ago =
        (Utc::now() - chrono::Duration::minutes(10)).duration_trunc(chrono::Duration::minutes(1)).unwrap();
    rewind(&app, &all, ten_minutes_ago).await;

    let log = wait_for_log(&app, &none, |log| count(log, "missed") == 1).await;
    assert_eq!(count(&log, "started"), 0, "`none` fires nothing missed");
    let missed = log.iter().find(|d| d["outcome"] == "missed").unwrap();
    assert!(missed["reason"].as_str().unwrap().contains("`none`"), "{missed}");
    let log = wait_for_log(&app, &last, |log| count(log, "started") == 1).await;
    let fired = log.iter().find(|d| d["outcome"] == "started").unwrap();
    assert_eq!(fired["scheduled_at"].as_str().unwrap().parse::<chrono::DateTime<Utc>>().unwrap(), new_year);
    // Ten missed minutes and the current one, each once (a minute may turn meanwhile).
    let log = wait_for_log(&app, &all, |log| count(log, "started") >= 11).await;
    let started = count(&log, "started");
    assert!(started <= 12, "{started} starts");
    for id in [&none, &last, &all] {
        let shown: Value = app.get(&format!("/api/v1/triggers/{id}")).send().await.unwrap().json().await.unwrap();
        let next: chrono::DateTime<Utc> = shown["next_fire_at"].as_str().unwrap().parse().unwrap();
        assert!(next > Utc::now() - chrono::Duration::seconds(60), "moved on past the downtime");
    }
    app.patch(&format!("/api/v1/triggers/{all}")).json(&json!({"paused": true})).send().await.unwrap();
}
both_backends!(
    invalid_expressions_and_time_zones_are_422_saying_what_to_fix,
    previews_list_the_next_fire_times_in_the_zone,
    an_every_second_schedule_starts_instances_until_paused,
    with_overlap_skip_a_tick_while_an_instance_runs_starts_nothing,
    with_overlap_queue_one_one_tick_waits_for_the_running_instance,
    after_downtime_missed_ticks_follow_the_catch_up_policy
);

/// A signed-in client of a `trellis serve` process.
struct Node {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Node {
    async fn connect(process: &Process) -> Node {
        let http = trellis::http_client::builder().build().unwrap();
        let token = crate::process::admin_token(&http, &process.base).await;
        Node { http, base: process.base.clone(), token }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
    }

    /// A published one-node workflow with an every-second schedule that fires every tick
    /// (`allow`) and catches up on all it missed; returns (workflow, trigger).
    async fn every_second(&self) -> (String, String) {
        let definition = json!({"nodes": [{"id": "a", "type": "noop"}]});
        let (_, created) = self
            .send(reqwest::Method::POST, "/api/v1/workflows", json!({"name": "ticks", "definition": definition}))
            .await;
        let wf = created["id"].as_str().unwrap().to_owned();
        assert_eq!(
            self.send(reqwest::Method::POST, &format!("/api/v1/workflows/{wf}/versions"), json!({})).await.0,
            201
        );
        let schedule = json!({"kind": "cron", "expression": "* * * * * *", "overlap": "allow", "catch_up": "all"});
        let (status, trigger) =
            self.send(reqwest::Method::POST, &format!("/api/v1/workflows/{wf}/triggers"), schedule).await;
        assert_eq!(status, 201);
        (wf, trigger["id"].as_str().unwrap().to_owned())
    }

    async fn instances(&self, wf: &str) -> Vec<Value> {
        let (_, list) =
            self.send(reqwest::Method::GET, &format!("/api/v1/instances?workflow={wf}&limit=500"), Value::Null).await;
        list["items"].as_array().unwrap().clone()
    }

    /// Polls (at most 60 s) until `wf` has at least `n` instances.
    async fn wait_for(&self, wf: &str, n: usize) {
        for _ in 0..600 {
            if self.instances(wf).await.len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("fewer than {n} instances were started");
    }

    /// Pauses the schedule, lets a fire under way finish, and checks every tick from the first
    /// to the last started exactly one instance.
    async fn pause_and_check_ticks(&self, wf: &str, trigger: &str) -> usize {
        assert_eq!(
            self.send(reqwest::Method::PATCH, &format!("/api/v1/triggers/{trigger}"), json!({"paused": true})).await.0,
            200
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut ticks = BTreeSet::new();
        for item in self.instances(wf).await {
            let (_, detail) = self
                .send(reqwest::Method::GET, &format!("/api/v1/instances/{}", item["id"].as_str().unwrap()), Value::Null)
                .await;
            let tick: chrono::DateTime<chrono::Utc> =
                detail["input"]["scheduled_at"].as_str().unwrap().parse().unwrap();
            assert!(ticks.insert(tick), "tick {tick} started twice");
        }
        let (first, last) = (*ticks.first().unwrap(), *ticks.last().unwrap());
        assert_eq!(
            ticks.len() as i64,
            (last - first).num_seconds() + 1,
            "no tick between the first and the last was left out"
        );
        ticks.len()
    }
}

/// Two `trellis serve` processes on one Postgres, one every-second schedule: each tick
/// starts exactly one instance, and none is left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_fire_each_tick_of_one_schedule_exactly_once() {
    let (url, _dir) = fresh_database(Backend::Postgres).await;
    let a = Process::start(&url, &[]).await;
    let b = Process::start(&url, &[]).await;
    let (on_a, on_b) = (Node::connect(&a).await, Node::connect(&b).await);
    let (wf, trigger) = on_a.every_second().await;
    on_b.wait_for(&wf, 8).await;
    assert!(on_b.pause_and_check_ticks(&wf, &trigger).await >= 8);
}

/// kill -9 of one of two processes while they fire an every-second schedule: the survivor
/// takes over once the dead one's lease expires, firing the ticks it missed, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_leaves_no_tick_doubled_or_lost() {
    let (url, _dir) = fresh_database(Backend::Postgres).await;
    let env = [("TRELLIS_LEASE_MS", "1500")];
    let a = Process::start(&url, &env).await;
    let b = Process::start(&url, &env).await;
    let (on_a, on_b) = (Node::connect(&a).await, Node::connect(&b).await);
    let (wf, trigger) = on_a.every_second().await;
    on_b.wait_for(&wf, 4).await;
    a.kill_hard().await;
    let before = on_b.instances(&wf).await.len();
    on_b.wait_for(&wf, before + 4).await;
    assert!(on_b.pause_and_check_ticks(&wf, &trigger).await >= before + 4);
}
