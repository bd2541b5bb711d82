//! Broker triggers under pressure: a workflow whose queue is past `max_queued` stops the
//! trigger taking messages (the broker keeps them) until it drains, and a broker that goes
//! away mid-stream shows the trigger `disconnected` with why, is reconnected with backoff,
//! and loses nothing.

use crate::common::{both_backends, TestApp};
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::BasicProperties;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use uuid::Uuid;

const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

async fn channel() -> (lapin::Connection, lapin::Channel) {
    let connection = lapin::Connection::connect(AMQP, lapin::ConnectionProperties::default()).await.unwrap();
    let channel = connection.create_channel().await.unwrap();
    (connection, channel)
}

async fn publish(channel: &lapin::Channel, queue: &str, from: usize, count: usize) {
    for n in from..from + count {
        let properties = BasicProperties::default().with_message_id(format!("m-{n}").into());
        let body = json!({"n": n}).to_string();
        channel
            .basic_publish("".into(), queue.into(), BasicPublishOptions::default(), body.as_bytes(), properties)
            .await
            .unwrap()
            .await
            .unwrap();
    }
}

async fn waiting(channel: &lapin::Channel, queue: &str) -> u32 {
    let passive = QueueDeclareOptions { passive: true, ..Default::default() };
    channel.queue_declare(queue.into(), passive, FieldTable::default()).await.unwrap().message_count()
}

async fn trigger(app: &TestApp, workflow: &str, body: Value) -> String {
    let response = app.post(&format!("/api/v1/workflows/{workflow}/triggers")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201, "create trigger");
    response.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
}

async fn shown(app: &TestApp, trigger: &str) -> Value {
    app.get(&format!("/api/v1/triggers/{trigger}")).send().await.unwrap().json().await.unwrap()
}

/// Polls (at most 30 s) until `check` holds for the trigger; returns it.
async fn wait_until(app: &TestApp, trigger: &str, check: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..300 {
        let t = shown(app, trigger).await;
        if check(&t) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("trigger {trigger} never got there: {}", shown(app, trigger).await);
}

async fn instances(app: &TestApp, workflow: &str) -> i64 {
    let list: Value =
        app.get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).send().await.unwrap().json().await.unwrap();
    list["counts"].as_object().unwrap().values().filter_map(Value::as_i64).sum()
}

async fn a_full_queue_stops_the_trigger_until_it_drains(app: TestApp) {
    let slow = json!({"nodes": [{"id": "wait", "type": "delay", "config": {"duration_ms": 400}}],
        "settings": {"max_concurrent_instances": 1}});
    let wf = app.publish(slow).await;
    let queue = format!("trellis-pressure-{}", Uuid::now_v7().simple());
    let id =
        trigger(&app, &wf, json!({"kind": "amqp", "url": AMQP, "queue": queue, "max_queued": 2, "prefetch": 1})).await;
    wait_until(&app, &id, |t| t["consumer"]["state"] == "connected").await;
    let (_connection, channel) = channel().await;
    publish(&channel, &queue, 0, 8).await;
    let paused = wait_until(&app, &id, |t| t["consumer"]["state"] == "paused").await;
    let reason = paused["consumer"]["reason"].as_str().unwrap();
    assert!(reason.contains("max_queued 2"), "{reason}");
    assert!(waiting(&channel, &queue).await > 0, "the broker keeps what the trigger does not take");
    // It drains one at a time and the trigger takes the rest as room frees.
    for _ in 0..200 {
        if instances(&app, &wf).await == 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(instances(&app, &wf).await, 8, "every message started once the queue drained");
}

/// A TCP forwarder to RabbitMQ that can be cut (every connection dropped, new ones
/// refused) and mended, on one loopback port.
struct Outage {
    port: u16,
    up: Arc<AtomicBool>,
}

impl Outage {
    async fn start() -> Outage {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let flag = up.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !flag.load(Ordering::SeqCst) {
                    continue;
                }
                let flag = flag.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect("127.0.0.1:5672").await else { return };
                    let copy = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
                    let cut = async {
                        while flag.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    };
                    tokio::select! { _ = copy => {}, _ = cut => {} }
                });
            }
        });
        Outage { port, up }
    }

    fn set(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
    }
}

async fn a_broker_gone_away_is_shown_and_reconnected_losing_nothing(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let outage = Outage::start().await;
    let queue = format!("trellis-outage-{}", Uuid::now_v7().simple());
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", outage.port);
    let id = trigger(&app, &wf, json!({"kind": "amqp", "url": url, "queue": queue})).await;
    wait_until(&app, &id, |t| t["consumer"]["state"] == "connected").await;
    let (_connection, channel) = channel().await;
    publish(&channel, &queue, 0, 20).await;
    outage.set(false);
    let down = wait_until(&app, &id, |t| t["consumer"]["state"] == "disconnected").await;
    assert!(!down["consumer"]["reason"].as_str().unwrap_or_default().is_empty(), "{down}");
    publish(&channel, &queue, 20, 20).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    outage.set(true);
    wait_until(&app, &id, |t| t["consumer"]["state"] == "connected").await;
    for _ in 0..300 {
        if instances(&app, &wf).await >= 40 && waiting(&channel, &queue).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(instances(&app, &wf).await, 40, "every message started once, across the outage");
}

/// A message for a workflow with nothing published yet is not dropped: it is logged `error`,
/// left with the broker, and starts once a version is published.
async fn a_message_waits_for_a_published_version(app: TestApp) {
    let created = app
        .create_workflow(json!({"name": "unpublished", "definition": {"nodes": [{"id": "a", "type": "noop"}]}}))
        .await;
    let wf = created.summary.id;
    let queue = format!("trellis-unpublished-{}", Uuid::now_v7().simple());
    let id = trigger(&app, &wf, json!({"kind": "amqp", "url": AMQP, "queue": queue})).await;
    wait_until(&app, &id, |t| t["consumer"]["state"] == "connected").await;
    let (_connection, channel) = channel().await;
    publish(&channel, &queue, 0, 1).await;
    let waiting_for_a_version = wait_until(&app, &id, |t| t["consumer"]["state"] == "paused").await;
    let reason = waiting_for_a_version["consumer"]["reason"].as_str().unwrap();
    assert!(reason.contains("publish"), "{reason}");
    let published = app.post(&format!("/api/v1/workflows/{wf}/versions")).send().await.unwrap();
    assert_eq!(published.status(), 201);
    for _ in 0..300 {
        if instances(&app, &wf).await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(instances(&app, &wf).await, 1, "the kept message started once a version was published");
    let log: Value = app.get(&format!("/api/v1/triggers/{id}/deliveries")).send().await.unwrap().json().await.unwrap();
    let outcomes: Vec<&str> = log["items"].as_array().unwrap().iter().map(|d| d["outcome"].as_str().unwrap()).collect();
    assert!(outcomes.contains(&"error") && outcomes.contains(&"started"), "{outcomes:?}");
}

both_backends!(
    a_message_waits_for_a_published_version,
    a_full_queue_stops_the_trigger_until_it_drains,
    a_broker_gone_away_is_shown_and_reconnected_losing_nothing
);
