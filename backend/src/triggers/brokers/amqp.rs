//! `amqp` triggers: a RabbitMQ (AMQP 0-9-1) queue with manual acknowledgement and a
//! prefetch. Every process consumes the queue (the broker shares messages among them); a
//! connection that goes away returns its unacknowledged messages to the queue, and one
//! whose start could not be written now is handed back (`nack`, requeued).

use super::message::Message;
use super::session::{gather, split_taken, Gathered, Session};
use super::spec::{AmqpSpec, DEFAULT_PREFETCH};
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Connection, ConnectionProperties};
use serde_json::{Map, Value};
use std::time::Duration;

const LOOK: Duration = Duration::from_secs(5);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection and a channel on which the trigger's queue exists (declared durable if it
/// did not), and how many messages wait in it.
pub async fn open(spec: &AmqpSpec, url: &str) -> Result<(Connection, Channel, u32), String> {
    let connect = Connection::connect(url, ConnectionProperties::default());
    let connection = tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| format!("could not connect to the AMQP broker within {} s", CONNECT_TIMEOUT.as_secs()))?
        .map_err(|e| format!("could not connect to the AMQP broker: {e}"))?;
    let opened = |e: lapin::Error| format!("could not open a channel: {e}");
    let channel = connection.create_channel().await.map_err(opened)?;
    let name = spec.queue.as_str();
    let passive = QueueDeclareOptions { passive: true, ..Default::default() };
    if let Ok(queue) = channel.queue_declare(name.into(), passive, FieldTable::default()).await {
        return Ok((connection, channel, queue.message_count()));
    }
    // A missing queue closes the channel it was asked on: declare it durable on a new one.
    let channel = connection.create_channel().await.map_err(opened)?;
    let queue = channel
        .queue_declare(name.into(), QueueDeclareOptions::durable(), FieldTable::default())
        .await
        .map_err(|e| format!("could not declare the queue `{name}`: {e}"))?;
    Ok((connection, channel, queue.message_count()))
}

/// Consumes until told to stop (`Ok`) or the connection fails (`Err`: why).
pub async fn consume(session: &mut Session, spec: &AmqpSpec) -> Result<(), String> {
    let url = session.url().await?;
    let (connection, channel, waiting) = open(spec, &url).await?;
    let prefetch = spec.prefetch.unwrap_or(DEFAULT_PREFETCH);
    channel.basic_qos(prefetch, BasicQosOptions::default()).await.map_err(|e| format!("basic.qos failed: {e}"))?;
    let tag = format!("trellis-{}-{}", session.node, session.trigger.id.simple());
    let mut deliveries = channel
        .basic_consume(
            spec.queue.as_str().into(),
            tag.as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(|e| format!("could not consume the queue `{}`: {e}", spec.queue))?;
    session.report("connected", None, Some(i64::from(waiting))).await;
    let result = loop {
        if !session.gate().await {
            break Ok(());
        }
        let batch = match gather(&mut deliveries, usize::from(prefetch), LOOK, &mut session.stop).await {
            Gathered::Batch(batch) => batch,
            Gathered::Idle => {
                let lag = queue_length(&channel, spec).await;
                session.report("connected", None, lag).await;
                continue;
            }
            Gathered::Ended => break Err("the AMQP channel closed".to_owned()),
            Gathered::Stopped => break Ok(()),
        };
        let (taken, mut failure) = split_taken(batch, "consuming from AMQP");
        let handled = session.handle(&taken.iter().map(|d| message(d, &spec.queue)).collect::<Vec<_>>()).await;
        // All taken: one acknowledgement for the batch (every earlier one is settled already).
        if let (Some(last), true) = (taken.last(), handled.iter().all(|h| h.ack())) {
            if let Err(e) = last.ack(BasicAckOptions { multiple: true }).await {
                break Err(format!("acknowledging the messages failed: {e}"));
            }
            if let Some(failure) = failure {
                break Err(failure);
            }
            continue;
        }
        for (delivery, h) in taken.iter().zip(&handled) {
            let done = if h.ack() {
                delivery.ack(BasicAckOptions::default()).await
            } else {
                delivery.nack(BasicNackOptions { requeue: true, ..Default::default() }).await
            };
            if let Err(e) = done {
                // Unacknowledged, it returns to the queue with the connection and is answered
                // as a duplicate.
                failure = Some(format!("acknowledging a message failed: {e}"));
            }
        }
        if let Some(failure) = failure {
            break Err(failure);
        }
    };
    // Closing returns what was prefetched but not taken to the queue at once.
    let _ = connection.close(200, "trellis consumer stopping".into()).await;
    result
}

async fn queue_length(channel: &Channel, spec: &AmqpSpec) -> Option<i64> {
    let passive = QueueDeclareOptions { passive: true, ..Default::default() };
    let queue = channel.queue_declare(spec.queue.as_str().into(), passive, FieldTable::default()).await.ok()?;
    Some(i64::from(queue.message_count()))
}

fn message(d: &lapin::message::Delivery, queue: &str) -> Message {
    let mut headers = Map::new();
    if let Some(table) = d.properties.headers() {
        for (name, value) in table.inner() {
            headers.insert(name.to_string(), header_value(value));
        }
    }
    let message_id = d.properties.message_id().as_ref().map(|id| id.to_string()).filter(|id| !id.is_empty());
    Message { body: d.data.clone(), source: queue.to_owned(), headers, message_id }
}

fn header_value(value: &AMQPValue) -> Value {
    match value {
        AMQPValue::LongString(s) => Value::String(s.to_string()),
        AMQPValue::ShortString(s) => Value::String(s.to_string()),
        AMQPValue::Boolean(b) => Value::Bool(*b),
        AMQPValue::LongInt(n) => Value::from(*n),
        AMQPValue::LongLongInt(n) => Value::from(*n),
        AMQPValue::ShortInt(n) => Value::from(*n),
        AMQPValue::LongUInt(n) => Value::from(*n),
        AMQPValue::Double(n) => Value::from(*n),
        other => Value::String(format!("{other:?}")),
    }
}
