//! Broker triggers against the real brokers on 127.0.0.1 (NATS JetStream 4222, RabbitMQ
//! 5672, Mosquitto 1883): one instance per message with its input, a repeated message
//! answered as a duplicate, refused messages acknowledged and logged, pause and resume, the
//! consumer's state, and settings refused at save with what to fix.

use crate::common::{both_backends, problem, TestApp};
use crate::webhooks::deliveries;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::BasicProperties;
use serde_json::{json, Value};
use std::time::Duration;
use uuid::Uuid;

const NATS: &str = "nats://127.0.0.1:4222";
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const MQTT: &str = "mqtt://127.0.0.1:1883";

async fn create(app: &TestApp, workflow: &str, body: Value) -> Value {
    let response = app.post(&format!("/api/v1/workflows/{workflow}/triggers")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201, "create trigger");
    response.json().await.unwrap()
}

/// Polls (at most 30 s) until the trigger's consumer reports `state`; returns the trigger.
async fn wait_state(app: &TestApp, trigger: &str, state: &str) -> Value {
    for _ in 0..300 {
        let shown: Value = app.get(&format!("/api/v1/triggers/{trigger}")).send().await.unwrap().json().await.unwrap();
        if shown["consumer"]["state"] == state {
            return shown;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("trigger {trigger} never reported {state}");
}

/// Polls (at most 30 s) until the log holds `n` entries; returns it.
async fn wait_log(app: &TestApp, trigger: &str, n: usize) -> Vec<Value> {
    for _ in 0..300 {
        let log = deliveries(app, trigger).await;
        if log.len() >= n {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("trigger {trigger} logged fewer than {n}: {:?}", deliveries(app, trigger).await);
}

fn count(log: &[Value], outcome: &str) -> usize {
    log.iter().filter(|d| d["outcome"] == outcome).count()
}

async fn inputs(app: &TestApp, workflow: &str) -> Vec<Value> {
    let list: Value = app
        .get(&format!("/api/v1/instances?workflow={workflow}&limit=500"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut inputs = Vec::new();
    for item in list["items"].as_array().unwrap() {
        let id = item["id"].as_str().unwrap();
        inputs.push(app.instance_json(id).await["input"].clone());
    }
    inputs
}

fn orders_workflow() -> Value {
    let schema = json!({"type": "object", "required": ["order"], "properties": {"order": {"type": "integer"}}});
    json!({"nodes": [{"id": "a", "type": "noop"}], "settings": {"input_schema": schema}})
}

async fn nats_messages_start_one_instance_each_and_a_repeat_starts_nothing(app: TestApp) {
    let wf = app.publish(orders_workflow()).await;
    let tag = Uuid::now_v7().simple().to_string();
    let (stream, subject) = (format!("T{tag}"), format!("trellis.test.{tag}"));
    let body = json!({"kind": "nats", "url": NATS, "stream": stream, "subject": subject,
        "input": "{'order': message.body.order}", "dedupe": "message.body.order"});
    let trigger = create(&app, &wf, body).await;
    let id = trigger["id"].as_str().unwrap().to_owned();
    wait_state(&app, &id, "connected").await;

    let client = async_nats::connect(NATS).await.unwrap();
    let js = async_nats::jetstream::new(client);
    for order in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3] {
        js.publish(subject.clone(), json!({"order": order}).to_string().into()).await.unwrap().await.unwrap();
    }
    let log = wait_log(&app, &id, 11).await;
    assert_eq!((count(&log, "started"), count(&log, "duplicate")), (10, 1), "{log:?}");
    let duplicate = log.iter().find(|d| d["outcome"] == "duplicate").unwrap();
    let first = log.iter().find(|d| d["outcome"] == "started" && d["delivery_id"] == "3").unwrap();
    assert_eq!(duplicate["instance_id"], first["instance_id"], "the repeat is answered with the first instance");
    let mut orders: Vec<i64> = inputs(&app, &wf).await.iter().map(|i| i["order"].as_i64().unwrap()).collect();
    orders.sort_unstable();
    assert_eq!(orders, (0..10).collect::<Vec<_>>());
    let metrics = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    let line = format!("trellis_broker_messages_total{{trigger=\"{id}\",outcome=\"started\"}} 10");
    assert!(metrics.contains(&line), "{line} in /metrics");
}

async fn amqp_refused_messages_are_acknowledged_and_logged(app: TestApp) {
    let wf = app.publish(orders_workflow()).await;
    let queue = format!("trellis-test-{}", Uuid::now_v7().simple());
    let trigger =
        create(&app, &wf, json!({"kind": "amqp", "url": AMQP, "queue": queue, "input": "message.body"})).await;
    let id = trigger["id"].as_str().unwrap().to_owned();
    assert_eq!(trigger["url"], "amqp://guest:***@127.0.0.1:5672/%2f", "the password is never shown");
    wait_state(&app, &id, "connected").await;

    let connection = lapin::Connection::connect(AMQP, lapin::ConnectionProperties::default()).await.unwrap();
    let channel = connection.create_channel().await.unwrap();
    let sends: [(&str, &[u8]); 4] =
        [("a", br#"{"order": 1}"#), ("b", b"not json"), ("c", &[0xff, 0xfe]), ("a", br#"{"order": 1}"#)];
    for (message_id, body) in sends {
        let properties = BasicProperties::default().with_message_id(message_id.into());
        channel
            .basic_publish("".into(), queue.as_str().into(), BasicPublishOptions::default(), body, properties)
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let log = wait_log(&app, &id, 4).await;
    assert_eq!((count(&log, "started"), count(&log, "rejected"), count(&log, "duplicate")), (1, 2, 1), "{log:?}");
    let reasons: Vec<&str> =
        log.iter().filter(|d| d["outcome"] == "rejected").map(|d| d["reason"].as_str().unwrap()).collect();
    assert!(reasons.iter().any(|r| r.contains("input_schema")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("not UTF-8")), "{reasons:?}");
    // Every message was acknowledged: the queue is empty.
    let passive = QueueDeclareOptions { passive: true, ..Default::default() };
    let mut waiting = u32::MAX;
    for _ in 0..50 {
        waiting =
            channel.queue_declare(queue.as_str().into(), passive, FieldTable::default()).await.unwrap().message_count();
        if waiting == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(waiting, 0, "refused messages are acknowledged, not redelivered forever");
}

async fn mqtt_messages_start_instances_and_pause_holds_them(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let topic = format!("trellis/test/{}", Uuid::now_v7().simple());
    let trigger = create(&app, &wf, json!({"kind": "mqtt", "url": MQTT, "topic": topic})).await;
    let id = trigger["id"].as_str().unwrap().to_owned();
    wait_state(&app, &id, "connected").await;

    let mut options = rumqttc::MqttOptions::new(format!("pub-{}", Uuid::new_v4().simple()), "127.0.0.1", 1883);
    options.set_keep_alive(Duration::from_secs(10));
    let (client, mut events) = rumqttc::AsyncClient::new(options, 64);
    tokio::spawn(async move { while events.poll().await.is_ok() {} });
    for n in 0..3 {
        client.publish(&topic, rumqttc::QoS::AtLeastOnce, false, json!({"n": n}).to_string()).await.unwrap();
    }
    let log = wait_log(&app, &id, 3).await;
    assert_eq!(count(&log, "started"), 3, "{log:?}");
    let mut seen: Vec<Value> = inputs(&app, &wf).await;
    seen.sort_by_key(|i| i["body"]["n"].as_i64());
    assert_eq!(seen[0], json!({"body": {"n": 0}, "topic": topic, "headers": {}, "message_id": null}));

    let paused = app.patch(&format!("/api/v1/triggers/{id}")).json(&json!({"paused": true})).send().await.unwrap();
    assert_eq!(paused.status(), 200);
    wait_state(&app, &id, "paused").await;
    client.publish(&topic, rumqttc::QoS::AtLeastOnce, false, json!({"n": 9}).to_string()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(deliveries(&app, &id).await.len(), 3, "a paused trigger takes nothing");
    app.patch(&format!("/api/v1/triggers/{id}")).json(&json!({"paused": false})).send().await.unwrap();
    let log = wait_log(&app, &id, 4).await;
    assert_eq!(count(&log, "started"), 4, "resumed, it takes what waited: {log:?}");
}

async fn bad_settings_are_422_at_their_fields(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let create = |body: Value| app.post(&format!("/api/v1/workflows/{wf}/triggers")).json(&body).send();
    let unreachable = problem(
        create(json!({"kind": "amqp", "url": "amqp://guest:hunter2@127.0.0.1:1/%2f", "queue": "q"})).await.unwrap(),
        422,
    )
    .await;
    assert_eq!(unreachable["errors"][0]["path"], "url", "{unreachable}");
    assert!(!unreachable.to_string().contains("hunter2"), "the password is never written: {unreachable}");
    let wrong = problem(
        create(json!({"kind": "nats", "url": "http://x", "stream": "a.b", "subject": "s"})).await.unwrap(),
        422,
    )
    .await;
    let paths: Vec<&str> = wrong["errors"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect();
    assert!(paths.contains(&"url") && paths.contains(&"stream"), "{wrong}");
    let qos = problem(create(json!({"kind": "mqtt", "url": MQTT, "topic": "t", "qos": 0})).await.unwrap(), 422).await;
    assert_eq!(qos["errors"][0]["path"], "qos", "{qos}");
    let expression =
        problem(create(json!({"kind": "mqtt", "url": MQTT, "topic": "t", "input": "message.("})).await.unwrap(), 422)
            .await;
    assert_eq!(expression["errors"][0]["path"], "input", "{expression}");
    let unknown =
        problem(create(json!({"kind": "amqp", "url": AMQP, "queue": "q", "exchange": "x"})).await.unwrap(), 422).await;
    assert!(unknown.to_string().contains("exchange"), "{unknown}");
}

async fn credentials_come_from_secrets_and_one_bad_message_stops_none(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    let create = |body: Value| app.post(&format!("/api/v1/workflows/{wf}/triggers")).json(&body).send();
    let queue = format!("trellis-test-{}", Uuid::now_v7().simple());
    let wrong = json!({"kind": "amqp", "url": "amqp://guest:not-the-password@127.0.0.1:5672/%2f", "queue": queue});
    let refused = problem(create(wrong).await.unwrap(), 422).await;
    assert_eq!(refused["errors"][0]["path"], "url", "{refused}");
    assert!(!refused.to_string().contains("not-the-password"), "{refused}");

    let secret =
        app.post("/api/v1/secrets").json(&json!({"name": "MQ_PASSWORD", "value": "guest"})).send().await.unwrap();
    assert_eq!(secret.status(), 201);
    let url = "amqp://guest:{{ secret.MQ_PASSWORD }}@127.0.0.1:5672/%2f";
    let body = json!({"kind": "amqp", "url": url, "queue": queue, "input": "{'half': 10 / message.body.n}"});
    let response = create(body).await.unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    let trigger: Value =
        app.get(&format!("/api/v1/workflows/{wf}/triggers")).send().await.unwrap().json().await.unwrap();
    let trigger = &trigger["items"][0];
    assert_eq!(trigger["url"], url, "a secret's reference is shown as written");
    let id = trigger["id"].as_str().unwrap().to_owned();
    wait_state(&app, &id, "connected").await;

    let connection = lapin::Connection::connect(AMQP, lapin::ConnectionProperties::default()).await.unwrap();
    let channel = connection.create_channel().await.unwrap();
    let big = format!("{{\"n\": 1, \"pad\": \"{}\"}}", "x".repeat(10 * 1024 * 1024));
    let sends: Vec<(&str, Vec<u8>)> = vec![
        ("ok-1", br#"{"n": 2}"#.to_vec()),
        ("zero", br#"{"n": 0}"#.to_vec()),
        ("big", big.into_bytes()),
        ("ok-2", br#"{"n": 5}"#.to_vec()),
    ];
    for (message_id, body) in sends {
        let properties = BasicProperties::default().with_message_id(message_id.into());
        channel
            .basic_publish("".into(), queue.as_str().into(), BasicPublishOptions::default(), &body, properties)
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let log = wait_log(&app, &id, 4).await;
    let outcome = |key: &str| log.iter().find(|d| d["delivery_id"] == key).map(|d| d["outcome"].clone());
    assert_eq!(outcome("ok-1"), Some(json!("started")), "{log:?}");
    assert_eq!(outcome("ok-2"), Some(json!("started")), "{log:?}");
    assert_eq!(outcome("zero"), Some(json!("rejected")), "the failing expression refuses that one only: {log:?}");
    assert_eq!(outcome("big"), Some(json!("rejected")), "a 10 MB message is refused by its size: {log:?}");
    let reason =
        |key: &str| log.iter().find(|d| d["delivery_id"] == key).unwrap()["reason"].as_str().unwrap().to_owned();
    assert!(reason("zero").contains("`input` expression failed"), "{}", reason("zero"));
    assert!(reason("big").contains("bytes"), "{}", reason("big"));
    let shown = serde_json::to_string(&deliveries(&app, &id).await).unwrap();
    assert!(!shown.contains("guest"), "no credential in the log: {shown}");
}

both_backends!(
    credentials_come_from_secrets_and_one_bad_message_stops_none,
    nats_messages_start_one_instance_each_and_a_repeat_starts_nothing,
    amqp_refused_messages_are_acknowledged_and_logged,
    mqtt_messages_start_instances_and_pause_holds_them,
    bad_settings_are_422_at_their_fields,
);
