//! Broker triggers across processes: kill -9 of the consuming process while messages
//! arrive loses none and doubles none (a message started but not acknowledged comes back
//! and is answered with its first instance), and three processes consuming one queue on
//! Postgres start each message once.

use crate::common::{fresh_database, on_both, Backend};
use crate::process::{Api, Process};
use lapin::options::BasicPublishOptions;
use lapin::BasicProperties;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;
use uuid::Uuid;

const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

async fn total(api: &Api, workflow: &str) -> i64 {
    let list = api.get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).await;
    list["counts"].as_object().unwrap().values().filter_map(Value::as_i64).sum()
}

/// Publishes `count` messages with ids `m-<n>` to `queue` (persistent, confirmed).
async fn publish(queue: &str, count: usize) {
    let connection = lapin::Connection::connect(AMQP, lapin::ConnectionProperties::default()).await.unwrap();
    let channel = connection.create_channel().await.unwrap();
    for n in 0..count {
        let properties = BasicProperties::default().with_message_id(format!("m-{n}").into()).with_delivery_mode(2);
        let body = json!({"n": n}).to_string();
        channel
            .basic_publish("".into(), queue.into(), BasicPublishOptions::default(), body.as_bytes(), properties)
            .await
            .unwrap();
    }
    connection.close(200, "done".into()).await.unwrap();
}

async fn amqp_trigger(api: &Api, workflow: &str, queue: &str) -> String {
    let body = json!({"kind": "amqp", "url": AMQP, "queue": queue});
    let (status, trigger) = api.post(&format!("/api/v1/workflows/{workflow}/triggers"), body).await;
    assert_eq!(status, 201, "{trigger}");
    trigger["id"].as_str().unwrap().to_owned()
}

/// Waits (at most `limit`) until `workflow` has `n` instances, then a moment more to see
/// that no more come; returns the count.
async fn settled_total(api: &Api, workflow: &str, n: i64, limit: Duration) -> i64 {
    let deadline = tokio::time::Instant::now() + limit;
    while total(api, workflow).await < n && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    total(api, workflow).await
}

/// Every distinct message id the log says started an instance, and those it answered as a
/// duplicate (a start committed by a process killed before it logged and acknowledged it).
async fn logged_keys(api: &Api, trigger: &str) -> (HashSet<String>, HashSet<String>) {
    let (mut keys, mut duplicates) = (HashSet::new(), HashSet::new());
    let mut cursor: Option<String> = None;
    loop {
        let after = cursor.as_ref().map(|c| format!("&cursor={c}")).unwrap_or_default();
        let page = api.get(&format!("/api/v1/triggers/{trigger}/deliveries?limit=200{after}")).await;
        for d in page["items"].as_array().unwrap() {
            let key = d["delivery_id"].as_str().unwrap().to_owned();
            match d["outcome"].as_str() {
                Some("started") => assert!(keys.insert(key), "{d} started twice"),
                Some("duplicate") => {
                    duplicates.insert(key);
                }
                _ => {}
            }
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (keys, duplicates),
        }
    }
}

const MESSAGES: usize = 400;

async fn amqp_messages_survive_kill_9_once_each(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let first = Process::start(&url, &[]).await;
    let api = Api::connect(&first.base).await;
    let workflow = api.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let queue = format!("trellis-crash-{}", Uuid::now_v7().simple());
    let trigger = amqp_trigger(&api, &workflow, &queue).await;
    publish(&queue, MESSAGES).await;
    // Cut the consumer off mid-stream: some messages started, some taken and not yet acknowledged.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while total(&api, &workflow).await < 50 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill_hard().await;

    let second = Process::start(&url, &[]).await;
    let api = Api::connect(&second.base).await;
    let made = settled_total(&api, &workflow, MESSAGES as i64, Duration::from_secs(60)).await;
    assert_eq!(made, MESSAGES as i64, "one instance per message across kill -9: none lost, none doubled");
    let (started, duplicates) = logged_keys(&api, &trigger).await;
    let expected: HashSet<String> = (0..MESSAGES).map(|n| format!("m-{n}")).collect();
    let seen: HashSet<String> = started.union(&duplicates).cloned().collect();
    assert_eq!(seen, expected, "every message was logged as started or, started before the kill, as a duplicate");
}

/// SIGTERM mid-stream: the process stops taking messages, commits and acknowledges what it
/// took, and exits cleanly; its successor takes the rest, and nothing is answered twice.
async fn sigterm_drains_what_was_taken(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let mut first = Process::start(&url, &[]).await;
    let api = Api::connect(&first.base).await;
    let workflow = api.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let queue = format!("trellis-drain-{}", Uuid::now_v7().simple());
    let trigger = amqp_trigger(&api, &workflow, &queue).await;
    publish(&queue, MESSAGES).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while total(&api, &workflow).await < 50 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = first.child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status =
        tokio::time::timeout(Duration::from_secs(30), first.child.wait()).await.expect("drains in time").unwrap();
    assert!(status.success(), "exit status {status}");

    let second = Process::start(&url, &[]).await;
    let api = Api::connect(&second.base).await;
    let made = settled_total(&api, &workflow, MESSAGES as i64, Duration::from_secs(60)).await;
    assert_eq!(made, MESSAGES as i64);
    let (started, duplicates) = logged_keys(&api, &trigger).await;
    assert_eq!(started.len(), MESSAGES, "each message started once");
    assert!(duplicates.is_empty(), "a drained process acknowledged all it took: {duplicates:?}");
}

async fn three_processes_consume_one_queue_once_each() {
    let (url, _dir) = fresh_database(Backend::Postgres).await;
    let mut processes = Vec::new();
    for _ in 0..3 {
        processes.push(Process::start(&url, &[]).await);
    }
    let api = Api::connect(&processes[0].base).await;
    let workflow = api.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let queue = format!("trellis-three-{}", Uuid::now_v7().simple());
    let trigger = amqp_trigger(&api, &workflow, &queue).await;
    // Every process has its consumer before the messages come, so they share them.
    tokio::time::sleep(Duration::from_secs(2)).await;
    publish(&queue, MESSAGES).await;
    let made = settled_total(&api, &workflow, MESSAGES as i64, Duration::from_secs(60)).await;
    assert_eq!(made, MESSAGES as i64);
    assert_eq!(logged_keys(&api, &trigger).await.0.len(), MESSAGES);
}

on_both!(amqp_messages_survive_kill_9_once_each, sigterm_drains_what_was_taken);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_postgres() {
    three_processes_consume_one_queue_once_each().await
}
