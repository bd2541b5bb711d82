//! `nats` triggers: a JetStream durable pull consumer with explicit acknowledgement. Every
//! process pulls from the same durable consumer (JetStream splits the messages); an
//! unacknowledged message comes back after `ACK_WAIT`, and one whose start could not be
//! written now is handed back at once (a negative acknowledgement with a delay).

use super::message::Message;
use super::session::{gather, split_taken, Gathered, Session};
use super::spec::NatsSpec;
use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, AckKind};
use serde_json::{Map, Value};
use std::time::Duration;

const ACK_WAIT: Duration = Duration::from_secs(30);
const BATCH: usize = 256;
const LOOK: Duration = Duration::from_secs(5);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The stream and durable consumer a trigger reads, made if missing.
pub async fn open(
    spec: &NatsSpec,
    url: &str,
    trigger: uuid::Uuid,
) -> Result<(async_nats::Client, jetstream::consumer::Consumer<pull::Config>), String> {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(CONNECT_TIMEOUT)
        .max_reconnects(Some(0))
        .connect(url)
        .await
        .map_err(|e| format!("could not connect to NATS: {e}"))?;
    let js = jetstream::new(client.clone());
    let stream = js
        .get_or_create_stream(jetstream::stream::Config {
            name: spec.stream.clone(),
            subjects: vec![spec.subject.clone()],
            ..Default::default()
        })
        .await
        .map_err(|e| format!("could not open the JetStream stream `{}`: {e}", spec.stream))?;
    // The default name follows the subject: a trigger whose subject changes reads through a
    // new consumer (an existing durable one keeps its filter).
    let subject_hash = crate::digest::sha256_hex(spec.subject.as_bytes());
    let name = spec.consumer.clone().unwrap_or_else(|| format!("trellis-{}-{}", trigger.simple(), &subject_hash[..8]));
    let consumer = stream
        .get_or_create_consumer(
            &name,
            pull::Config {
                durable_name: Some(name.clone()),
                ack_policy: AckPolicy::Explicit,
                ack_wait: ACK_WAIT,
                filter_subject: spec.subject.clone(),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| format!("could not open the durable consumer `{name}` on `{}`: {e}", spec.stream))?;
    let found = &consumer.cached_info().config;
    if found.filter_subject != spec.subject || found.ack_policy != AckPolicy::Explicit {
        return Err(format!(
            "the consumer `{name}` exists with filter `{}` and {:?} acknowledgement; a trigger needs filter `{}` and \
             explicit acknowledgement: name another `consumer`, or leave it out",
            found.filter_subject, found.ack_policy, spec.subject
        ));
    }
    Ok((client, consumer))
}

/// Consumes until told to stop (`Ok`) or the connection fails (`Err`: why).
pub async fn consume(session: &mut Session, spec: &NatsSpec) -> Result<(), String> {
    let url = session.url().await?;
    let (_client, consumer) = open(spec, &url, session.trigger.id).await?;
    let mut messages = consumer
        .stream()
        .max_messages_per_batch(BATCH)
        .heartbeat(Duration::from_secs(5))
        .expires(Duration::from_secs(30))
        .messages()
        .await
        .map_err(|e| format!("could not pull from the consumer: {e}"))?;
    session.report("connected", None, lag(&consumer).await).await;
    loop {
        if !session.gate().await {
            return Ok(());
        }
        let batch = match gather(&mut messages, BATCH, LOOK, &mut session.stop).await {
            Gathered::Batch(batch) => batch,
            Gathered::Idle => {
                session.report("connected", None, lag(&consumer).await).await;
                continue;
            }
            Gathered::Ended => return Err("the NATS connection closed".into()),
            Gathered::Stopped => return Ok(()),
        };
        let (taken, mut failure) = split_taken(batch, "pulling from NATS");
        let handled = session.handle(&taken.iter().map(message).collect::<Vec<_>>()).await;
        for (m, h) in taken.iter().zip(&handled) {
            let acked =
                if h.ack() { m.ack().await } else { m.ack_with(AckKind::Nak(Some(Duration::from_secs(5)))).await };
            if let Err(e) = acked {
                // Unacknowledged, it comes back after ACK_WAIT and is answered as a duplicate.
                failure = Some(format!("acknowledging a message failed: {e}"));
            }
        }
        if let Some(failure) = failure {
            return Err(failure);
        }
    }
}

async fn lag(consumer: &jetstream::consumer::Consumer<pull::Config>) -> Option<i64> {
    consumer.get_info().await.ok().map(|info| info.num_pending as i64)
}

fn message(m: &jetstream::Message) -> Message {
    let mut headers = Map::new();
    if let Some(map) = &m.headers {
        for (name, values) in map.iter() {
            let joined = values.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ");
            headers.insert(name.to_string(), Value::String(joined));
        }
    }
    // An empty `Nats-Msg-Id` names nothing: the stream sequence does.
    let id = m
        .headers
        .as_ref()
        .and_then(|h| h.get("Nats-Msg-Id"))
        .map(|v| v.as_str().to_owned())
        .filter(|id| !id.is_empty());
    let sequence = m.info().ok().map(|info| format!("{}:{}", info.stream, info.stream_sequence));
    Message { body: m.payload.to_vec(), source: m.subject.to_string(), headers, message_id: id.or(sequence) }
}
