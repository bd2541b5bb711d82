//! The settings of the broker trigger kinds (`nats`, `amqp`, `mqtt`) and their checks. What
//! they share (a URL, the `input` and `dedupe` expressions over `message`, `max_queued`) is
//! read through [`Broker`].

use crate::sandbox::protocol::Source;
use crate::sandbox::{Sandbox, Stopped};
use serde::{Deserialize, Serialize};
use trellis_model::Issue;

/// Queued instances of the workflow past which a trigger stops taking messages.
pub const DEFAULT_MAX_QUEUED: u32 = 1_000;
pub const MAX_MAX_QUEUED: u32 = 1_000_000;
/// AMQP: unacknowledged messages the broker sends ahead.
pub const DEFAULT_PREFETCH: u16 = 200;
const MAX_URL_LEN: usize = 2_000;
const MAX_NAME_LEN: usize = 255;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsSpec {
    /// `nats://host:4222` (or `tls://`); may reference secrets (`{{ secret.NAME }}`).
    pub url: String,
    /// The JetStream stream (made, taking `subject`, if it does not exist).
    pub stream: String,
    pub subject: String,
    /// The durable pull consumer's name (default `trellis-<trigger id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queued: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AmqpSpec {
    /// `amqp://user:password@host:5672/vhost` (or `amqps://`); may reference secrets.
    pub url: String,
    /// The queue (declared durable if it does not exist).
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queued: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttSpec {
    /// `mqtt://user:password@host:1883` (or `mqtts://`); may reference secrets.
    pub url: String,
    /// A topic filter (`+` and `#` allowed); every process shares it (`$share/...`).
    pub topic: String,
    /// 1 (default) or 2: QoS 0 messages are never acknowledged, so one could be lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queued: Option<u32>,
}

/// What every broker kind has.
#[derive(Debug, Clone, Copy)]
pub struct Broker<'a> {
    pub url: &'a str,
    pub input: Option<&'a str>,
    pub dedupe: Option<&'a str>,
    pub max_queued: u32,
    /// The URL schemes this kind connects with.
    pub schemes: &'static [&'static str],
    /// What the default input calls where a message came from: `subject`, `queue` or `topic`.
    pub source_field: &'static str,
}

macro_rules! broker_of {
    ($spec:ty, $schemes:expr, $source:literal) => {
        impl $spec {
            pub fn broker(&self) -> Broker<'_> {
                Broker {
                    url: &self.url,
                    input: self.input.as_deref(),
                    dedupe: self.dedupe.as_deref(),
                    max_queued: self.max_queued.unwrap_or(DEFAULT_MAX_QUEUED),
                    schemes: $schemes,
                    source_field: $source,
                }
            }
        }
    };
}

broker_of!(NatsSpec, &["nats", "tls"], "subject");
broker_of!(AmqpSpec, &["amqp", "amqps"], "queue");
broker_of!(MqttSpec, &["mqtt", "mqtts", "tcp", "ssl"], "topic");

impl NatsSpec {
    pub fn check(&self) -> Vec<Issue> {
        let mut issues = Vec::new();
        name_check(&mut issues, "stream", &self.stream, true);
        text_check(&mut issues, "subject", &self.subject);
        if let Some(consumer) = &self.consumer {
            name_check(&mut issues, "consumer", consumer, true);
        }
        issues
    }
}

impl AmqpSpec {
    pub fn check(&self) -> Vec<Issue> {
        let mut issues = Vec::new();
        name_check(&mut issues, "queue", &self.queue, false);
        if self.prefetch == Some(0) {
            issues.push(Issue::new("invalid_trigger", "`prefetch` must be 1-65535").path("prefetch"));
        }
        issues
    }
}

impl MqttSpec {
    pub fn check(&self) -> Vec<Issue> {
        let mut issues = Vec::new();
        text_check(&mut issues, "topic", &self.topic);
        if let Some(qos) = self.qos.filter(|q| !(1..=2).contains(q)) {
            let message = format!(
                "`qos` must be 1 or 2 (was {qos}): QoS 0 messages are never acknowledged, so a crash could lose one"
            );
            issues.push(Issue::new("invalid_trigger", message).path("qos"));
        }
        issues
    }

    pub fn qos(&self) -> u8 {
        self.qos.unwrap_or(1)
    }
}

impl Broker<'_> {
    /// The checks every kind shares: the URL's shape, `max_queued`, and the expressions'
    /// syntax (compiled in the sandbox; a message's fields can only be checked on a message).
    pub async fn check(&self, sandbox: &Sandbox) -> Result<Vec<Issue>, Stopped> {
        let mut issues = Vec::new();
        self.check_url(&mut issues);
        if !(1..=MAX_MAX_QUEUED).contains(&self.max_queued) {
            let message = format!("`max_queued` must be 1-{MAX_MAX_QUEUED} (default {DEFAULT_MAX_QUEUED})");
            issues.push(Issue::new("invalid_trigger", message).path("max_queued"));
        }
        for (field, text) in [("input", self.input), ("dedupe", self.dedupe)] {
            let Some(text) = text else { continue };
            if text.trim().is_empty() || text.len() > crate::triggers::spec::MAX_MAPPING_LEN {
                let message = format!(
                    "`{field}` must be a non-empty expression of at most {} bytes",
                    crate::triggers::spec::MAX_MAPPING_LEN
                );
                issues.push(Issue::new("invalid_expression", message).path(field));
                continue;
            }
            let source = Source::Expression(text.to_owned());
            if let Some(Err(e)) = sandbox.syntax_of(vec![source.clone()]).await?.remove(&source) {
                let message = format!("`{field}` is not a valid expression: {e}; e.g. `message.body.order_id`");
                issues.push(Issue::new("invalid_expression", message).path(field));
            }
        }
        Ok(issues)
    }

    fn check_url(&self, issues: &mut Vec<Issue>) {
        let schemes = self.schemes.iter().map(|s| format!("{s}://")).collect::<Vec<_>>().join(" or ");
        let scheme = self.url.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
        let problem = if self.url.trim().is_empty() || self.url.len() > MAX_URL_LEN {
            Some(format!("`url` must be 1-{MAX_URL_LEN} characters, starting {schemes}"))
        } else if !scheme.is_some_and(|s| self.schemes.contains(&s.as_str())) {
            Some(format!("`url` must start {schemes}"))
        } else {
            None
        };
        if let Some(message) = problem {
            issues.push(Issue::new("invalid_url", message).path("url"));
        }
    }
}

/// A stream, consumer or queue name: 1-255 bytes; NATS names (`strict`) also without
/// whitespace, `.`, `*`, `>`, `/` or `\`.
fn name_check(issues: &mut Vec<Issue>, field: &str, name: &str, strict: bool) {
    let bad = |c: char| c.is_whitespace() || c.is_control() || (strict && ".*>/\\".contains(c));
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(bad) {
        let extra =
            if strict { " without whitespace, `.`, `*`, `>`, `/` or `\\`" } else { " without control characters" };
        let message = format!("`{field}` must be 1-{MAX_NAME_LEN} bytes{extra}");
        issues.push(Issue::new("invalid_trigger", message).path(field));
    }
}

/// A subject or topic: 1-1024 bytes without whitespace.
fn text_check(issues: &mut Vec<Issue>, field: &str, text: &str) {
    if text.is_empty() || text.len() > 1024 || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        let message = format!("`{field}` must be 1-1024 bytes without whitespace");
        issues.push(Issue::new("invalid_trigger", message).path(field));
    }
}
