//! `mqtt` triggers: QoS 1 (or 2) with manual acknowledgement in a persistent session. Every
//! process subscribes through one shared subscription (`$share/trellis-<trigger>/<topic>`),
//! so each message goes to one of them; the client id is stable for a process (its host
//! and port), so a process killed mid-batch gets its unacknowledged messages again when it
//! comes back. MQTT has no negative acknowledgement: a message whose start could not be
//! written now is tried again here until it can be, or until the process stops (then the
//! broker delivers it again to the next session).

use super::message::Message;
use super::session::{gather, split_taken, Gathered, Session};
use super::spec::MqttSpec;
use rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, Packet, Publish, QoS, TlsConfiguration, Transport};
use serde_json::Map;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

const BATCH: usize = 256;
const LOOK: Duration = Duration::from_secs(5);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The client's options from the URL: host, port, credentials, TLS for `mqtts://`/`ssl://`.
pub fn options(url: &str, client_id: &str) -> Result<MqttOptions, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("the `url` is not a URL: {e}"))?;
    let tls = matches!(parsed.scheme(), "mqtts" | "ssl");
    let host = parsed.host_str().filter(|h| !h.is_empty()).ok_or("the `url` names no host")?;
    let port = parsed.port().unwrap_or(if tls { 8883 } else { 1883 });
    let mut options = MqttOptions::new(client_id, host.trim_matches(['[', ']']), port);
    options.set_keep_alive(Duration::from_secs(15)).set_clean_session(false).set_manual_acks(true);
    options.set_max_packet_size(16 * 1024 * 1024, 64 * 1024);
    if !parsed.username().is_empty() {
        let user = percent_encoding::percent_decode_str(parsed.username()).decode_utf8_lossy().into_owned();
        let password =
            parsed.password().map(|p| percent_encoding::percent_decode_str(p).decode_utf8_lossy().into_owned());
        options.set_credentials(user, password.unwrap_or_default());
    }
    if tls {
        let config = crate::http_client::broker_tls();
        options.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(Arc::new(config))));
    }
    Ok(options)
}

/// Connects and waits for the broker's answer (within `CONNECT_TIMEOUT`).
pub async fn connect(options: MqttOptions) -> Result<(AsyncClient, EventLoop), String> {
    let (client, mut events) = AsyncClient::new(options, 64);
    let connected = async {
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => return Ok(()),
                Ok(_) => continue,
                Err(e) => return Err(format!("could not connect to the MQTT broker: {e}")),
            }
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, connected)
        .await
        .map_err(|_| format!("could not connect to the MQTT broker within {} s", CONNECT_TIMEOUT.as_secs()))??;
    Ok((client, events))
}

/// Consumes until told to stop (`Ok`) or the connection fails (`Err`: why).
pub async fn consume(session: &mut Session, spec: &MqttSpec) -> Result<(), String> {
    let url = session.url().await?;
    let id = session.trigger.id.simple().to_string();
    // The id's random tail (a v7 id begins with its time: triggers made together share it).
    // The topic's hash too: a changed topic is a new session, so the old subscription (kept by
    // the persistent session) no longer starts anything.
    let topic = &crate::digest::sha256_hex(spec.topic.as_bytes())[..6];
    let client_id = format!("trellis-{}-{}-{topic}", &id[id.len() - 8..], &session.node[..session.node.len().min(6)]);
    let (client, mut events) = connect(options(&url, &client_id)?).await?;
    let qos = if spec.qos() == 2 { QoS::ExactlyOnce } else { QoS::AtLeastOnce };
    let filter = format!("$share/trellis-{id}/{}", spec.topic);
    let early = subscribe(&client, &mut events, filter, qos).await?;
    let (sender, mut received) = mpsc::channel(BATCH * 4);
    for publish in early {
        let _ = sender.send(Ok(publish)).await;
    }
    let poller = tokio::spawn(poll(events, sender));
    session.report("connected", None, None).await;
    let mut publishes = futures_util::stream::poll_fn(move |cx| received.poll_recv(cx));
    let result = loop {
        if !session.gate().await {
            break Ok(());
        }
        let batch = match gather(&mut publishes, BATCH, LOOK, &mut session.stop).await {
            Gathered::Batch(batch) => batch,
            Gathered::Idle => continue,
            Gathered::Ended => break Err("the MQTT connection closed".to_owned()),
            Gathered::Stopped => break Ok(()),
        };
        let (taken, failure) = split_taken(batch, "the MQTT connection");
        if let Err(e) = take(session, &client, taken).await {
            break Err(e);
        }
        if let Some(failure) = failure {
            break Err(failure);
        }
    };
    let _ = client.disconnect().await;
    poller.abort();
    result
}

/// Subscribes and waits for the broker's acknowledgement (so a message published once the
/// trigger says `connected` is not missed); returns what the persistent session delivered
/// meanwhile.
async fn subscribe(
    client: &AsyncClient,
    events: &mut EventLoop,
    filter: String,
    qos: QoS,
) -> Result<Vec<Publish>, String> {
    client.subscribe(filter, qos).await.map_err(|e| format!("could not subscribe: {e}"))?;
    let mut early = Vec::new();
    let acknowledged = async {
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::SubAck(ack))) => {
                    let refused = ack.return_codes.iter().any(|c| matches!(c, rumqttc::SubscribeReasonCode::Failure));
                    return if refused {
                        Err("the broker refused the subscription (check the topic and the user's access)".to_owned())
                    } else {
                        Ok(())
                    };
                }
                Ok(Event::Incoming(Packet::Publish(publish))) => early.push(publish),
                Ok(_) => continue,
                Err(e) => return Err(format!("the MQTT connection failed while subscribing: {e}")),
            }
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, acknowledged).await.map_err(|_| {
        format!("the broker did not acknowledge the subscription within {} s", CONNECT_TIMEOUT.as_secs())
    })??;
    Ok(early)
}

/// Handles the publishes and acknowledges each, trying again those the server could not
/// handle now until it can (or the process stops: then they stay unacknowledged).
async fn take(session: &mut Session, client: &AsyncClient, mut pending: Vec<Publish>) -> Result<(), String> {
    while !pending.is_empty() {
        let messages: Vec<Message> = pending.iter().map(message).collect();
        let handled = session.handle(&messages).await;
        let mut again = Vec::new();
        for (publish, h) in pending.into_iter().zip(&handled) {
            if h.ack() {
                client.ack(&publish).await.map_err(|e| format!("acknowledging a message failed: {e}"))?;
            } else {
                again.push(publish);
            }
        }
        pending = again;
        // Past the gate again: the same growing wait after a failed batch as every kind.
        if !pending.is_empty() && !session.gate().await {
            return Ok(());
        }
    }
    Ok(())
}

/// Drives the connection (keep-alives, acknowledgements) and passes messages on, or why the
/// connection ended; its channel's bound and the broker's in-flight window hold a fast
/// producer back.
async fn poll(mut events: EventLoop, sender: mpsc::Sender<Result<Publish, rumqttc::ConnectionError>>) {
    loop {
        let polled = match events.poll().await {
            Ok(Event::Incoming(Packet::Publish(publish))) => Ok(publish),
            Ok(_) => continue,
            Err(e) => Err(e),
        };
        let failed = polled.is_err();
        if sender.send(polled).await.is_err() || failed {
            return;
        }
    }
}

fn message(p: &Publish) -> Message {
    Message { body: p.payload.to_vec(), source: p.topic.clone(), headers: Map::new(), message_id: None }
}
