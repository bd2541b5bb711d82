//! Broker triggers: messages waiting on NATS JetStream, RabbitMQ and Mosquitto (on this
//! machine), taken by a resumed trigger, against the same run's REST start rate; and each
//! broker's own publish rate, the floor a producer sets.

use crate::server::Api;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const NATS: &str = "nats://127.0.0.1:4222";
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const MQTT: &str = "mqtt://127.0.0.1:1883";

/// REST starts of `count` (16 in flight), then each broker kind: `count` messages published
/// while its trigger is paused, then the trigger resumed and timed until every message has
/// its instance.
pub async fn throughput(api: &Api, count: usize, out: &mut crate::scenarios::Figures) -> Result<()> {
    let noop = json!({"nodes": [{"id": "a", "type": "noop"}]});
    let rest = api.publish("bench brokers rest", noop.clone()).await?;
    let began = Instant::now();
    api.start_many(&rest, count, 16).await?;
    out.insert("broker_rest_starts_per_s".into(), count as f64 / began.elapsed().as_secs_f64());
    for kind in ["nats", "amqp", "mqtt"] {
        // Mosquitto keeps at most 1,000 messages for a session by default
        // (`max_queued_messages`): a larger backlog would be dropped by the broker.
        let count = if kind == "mqtt" { count.min(1_000) } else { count };
        let workflow = api.publish(&format!("bench brokers {kind}"), noop.clone()).await?;
        let tag = uuid::Uuid::now_v7().simple().to_string();
        let source = match kind {
            "nats" => json!({"url": NATS, "stream": format!("BENCH{tag}"), "subject": format!("bench.{tag}")}),
            "amqp" => json!({"url": AMQP, "queue": format!("bench-{tag}")}),
            _ => json!({"url": MQTT, "topic": format!("bench/{tag}"), "dedupe": "message.body.n"}),
        };
        let mut body = source.clone();
        body["kind"] = json!(kind);
        let trigger = api.post(&format!("/api/v1/workflows/{workflow}/triggers"), body).await?;
        let id = trigger["id"].as_str().context("a trigger id")?.to_owned();
        // Connected once (MQTT's persistent session exists), then paused while the backlog is made.
        wait_state(api, &id, "connected").await?;
        api.patch(&format!("/api/v1/triggers/{id}"), json!({"paused": true})).await?;
        wait_state(api, &id, "paused").await?;
        let published = Instant::now();
        publish(kind, &source, count).await?;
        out.insert(format!("broker_{kind}_publish_per_s"), count as f64 / published.elapsed().as_secs_f64());
        let resumed = Instant::now();
        api.patch(&format!("/api/v1/triggers/{id}"), json!({"paused": false})).await?;
        // Timed from the first start: how soon a resumed trigger reconnects is printed apart.
        let mut first = None;
        loop {
            let made = total(api, &workflow).await?;
            if made > 0 && first.is_none() {
                first = Some((Instant::now(), made));
                out.insert(format!("broker_{kind}_resume_to_first_start_ms"), resumed.elapsed().as_secs_f64() * 1e3);
            }
            if made >= count as i64 {
                break;
            }
            anyhow::ensure!(resumed.elapsed() < Duration::from_secs(300), "{kind}: not every message started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let (began, before) = first.context("a first start")?;
        let rate = (count as i64 - before) as f64 / began.elapsed().as_secs_f64().max(f64::EPSILON);
        out.insert(format!("broker_{kind}_starts_per_s"), rate);
        api.drain(&workflow, Duration::from_millis(50)).await?;
    }
    Ok(())
}

async fn wait_state(api: &Api, trigger: &str, state: &str) -> Result<()> {
    for _ in 0..300 {
        let shown = api.get(&format!("/api/v1/triggers/{trigger}")).await?;
        if shown["consumer"]["state"] == state {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("trigger {trigger} never reported {state}")
}

async fn total(api: &Api, workflow: &str) -> Result<i64> {
    let list = api.get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).await?;
    Ok(list["counts"].as_object().context("counts")?.values().filter_map(Value::as_i64).sum())
}

async fn publish(kind: &str, source: &Value, count: usize) -> Result<()> {
    let text = |key: &str| source[key].as_str().unwrap_or_default().to_owned();
    match kind {
        "nats" => {
            let js = async_nats::jetstream::new(async_nats::connect(NATS).await?);
            // At most 500 acknowledgements outstanding (the client holds back past its own bound).
            let mut acks = std::collections::VecDeque::with_capacity(500);
            for n in 0..count {
                if acks.len() == 500 {
                    let ack: async_nats::jetstream::context::PublishAckFuture = acks.pop_front().context("an ack")?;
                    ack.await?;
                }
                acks.push_back(js.publish(text("subject"), json!({"n": n}).to_string().into()).await?);
            }
            for ack in acks {
                ack.await?;
            }
        }
        "amqp" => {
            let connection = lapin::Connection::connect(AMQP, lapin::ConnectionProperties::default()).await?;
            let channel = connection.create_channel().await?;
            let queue = text("queue");
            let mut confirms = Vec::with_capacity(count);
            for n in 0..count {
                let properties = lapin::BasicProperties::default().with_message_id(format!("m-{n}").into());
                let body = json!({"n": n}).to_string();
                let options = lapin::options::BasicPublishOptions::default();
                confirms.push(
                    channel
                        .basic_publish("".into(), queue.as_str().into(), options, body.as_bytes(), properties)
                        .await?,
                );
            }
            for confirm in confirms {
                confirm.await?;
            }
            connection.close(200, "done".into()).await?;
        }
        _ => {
            let id = format!("bench-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
            let mut options = rumqttc::MqttOptions::new(id, "127.0.0.1", 1883);
            options.set_inflight(1000);
            let (client, mut events) = rumqttc::AsyncClient::new(options, 1024);
            // The event loop sends what is queued and counts the broker's acknowledgements.
            let acknowledged = tokio::spawn(async move {
                let mut acked = 0;
                while acked < count {
                    match events.poll().await {
                        Ok(rumqttc::Event::Incoming(rumqttc::Packet::PubAck(_))) => acked += 1,
                        Ok(_) => {}
                        Err(e) => anyhow::bail!("publishing to MQTT failed: {e}"),
                    }
                }
                anyhow::Ok(())
            });
            let topic = text("topic");
            for n in 0..count {
                client.publish(&topic, rumqttc::QoS::AtLeastOnce, false, json!({"n": n}).to_string()).await?;
            }
            tokio::time::timeout(Duration::from_secs(120), acknowledged)
                .await
                .context("MQTT acknowledgements")???;
            client.disconnect().await.ok();
        }
    }
    Ok(())
}
