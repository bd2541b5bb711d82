//! The settings of each trigger kind, as clients send them and as they are stored (the
//! `spec` column), and their validation: every problem listed with what to fix.

use super::brokers::spec::{AmqpSpec, Broker, MqttSpec, NatsSpec};
use super::schedule::Schedule;
use crate::sandbox::protocol::Source;
use crate::sandbox::{Sandbox, Stopped};
use serde::{Deserialize, Serialize};
use trellis_model::{Issue, TriggerKind};

/// Expressions longer than this are refused (they are evaluated on every delivery).
pub const MAX_MAPPING_LEN: usize = 4_000;
pub const MAX_RATE_PER_MINUTE: u32 = 100_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TriggerSpec {
    Webhook(WebhookSpec),
    Cron(CronSpec),
    Nats(NatsSpec),
    Amqp(AmqpSpec),
    Mqtt(MqttSpec),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    #[default]
    Standard,
    /// GitHub: `X-Hub-Signature-256`, deduplicated by `X-GitHub-Delivery`.
    Github,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSpec {
    #[serde(default)]
    pub preset: Preset,
    /// A minijinja expression over `{body, headers}` whose value becomes the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_mapping: Option<String>,
    /// Instances this webhook may start per minute; beyond it, 429 with `Retry-After`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_per_minute: Option<u32>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// A tick while an instance of this schedule is unfinished starts nothing.
    #[default]
    Skip,
    /// Such a tick waits until the instance finishes; at most one waits.
    QueueOne,
    /// Every tick starts an instance.
    Allow,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Ticks missed while no process was running are dropped.
    #[default]
    None,
    /// The latest missed tick fires once.
    Last,
    /// Every missed tick fires, up to `schedule::MAX_CATCH_UP`.
    All,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CronSpec {
    /// 5 fields (minute first) or 6 (second first).
    pub expression: String,
    /// An IANA zone such as `Europe/Berlin`; ticks follow its wall clock, DST included.
    #[serde(default = "utc")]
    pub timezone: String,
    #[serde(default)]
    pub overlap: Overlap,
    #[serde(default)]
    pub catch_up: CatchUp,
}

fn utc() -> String {
    "UTC".to_owned()
}

impl TriggerSpec {
    pub fn kind(&self) -> TriggerKind {
        match self {
            TriggerSpec::Webhook(_) => TriggerKind::Webhook,
            TriggerSpec::Cron(_) => TriggerKind::Cron,
            TriggerSpec::Nats(_) => TriggerKind::Nats,
            TriggerSpec::Amqp(_) => TriggerKind::Amqp,
            TriggerSpec::Mqtt(_) => TriggerKind::Mqtt,
        }
    }

    /// What a broker kind's settings share; `None` for webhooks and schedules.
    pub fn broker(&self) -> Option<Broker<'_>> {
        match self {
            TriggerSpec::Nats(s) => Some(s.broker()),
            TriggerSpec::Amqp(s) => Some(s.broker()),
            TriggerSpec::Mqtt(s) => Some(s.broker()),
            TriggerSpec::Webhook(_) | TriggerSpec::Cron(_) => None,
        }
    }

    /// Reads the stored form back (written by this module, so it parses).
    pub fn from_stored(value: &serde_json::Value) -> Result<TriggerSpec, String> {
        serde_json::from_value(value.clone()).map_err(|e| format!("a stored trigger spec does not parse: {e}"))
    }

    /// Every problem with these settings; empty when they are usable. An input mapping is
    /// compiled in the sandbox (never run: a field of the body can only be checked against
    /// a real body). `Err`: the sandbox could not compile it for a reason of its own (busy,
    /// a worker lost): not the settings' fault; try again.
    pub async fn check(&self, sandbox: &Sandbox) -> Result<Vec<Issue>, Stopped> {
        match self {
            TriggerSpec::Webhook(w) => w.check(sandbox).await,
            TriggerSpec::Cron(c) => match Schedule::new(c) {
                Ok(_) => Ok(Vec::new()),
                Err(issues) => Ok(issues),
            },
            TriggerSpec::Nats(s) => with_broker_issues(s.check(), s.broker(), sandbox).await,
            TriggerSpec::Amqp(s) => with_broker_issues(s.check(), s.broker(), sandbox).await,
            TriggerSpec::Mqtt(s) => with_broker_issues(s.check(), s.broker(), sandbox).await,
        }
    }
}

/// A broker kind's own problems, then those every broker kind shares.
async fn with_broker_issues(
    mut issues: Vec<Issue>,
    broker: Broker<'_>,
    sandbox: &Sandbox,
) -> Result<Vec<Issue>, Stopped> {
    issues.extend(broker.check(sandbox).await?);
    Ok(issues)
}

impl WebhookSpec {
    async fn check(&self, sandbox: &Sandbox) -> Result<Vec<Issue>, Stopped> {
        let mut issues = Vec::new();
        if let Some(mapping) = &self.input_mapping {
            if mapping.trim().is_empty() || mapping.len() > MAX_MAPPING_LEN {
                let message =
                    format!("`input_mapping` must be a non-empty expression of at most {MAX_MAPPING_LEN} bytes");
                issues.push(Issue::new("invalid_input_mapping", message).path("input_mapping"));
            } else if let Some(Err(e)) = {
                let source = Source::Expression(mapping.to_owned());
                sandbox.syntax_of(vec![source.clone()]).await?.remove(&source)
            } {
                let message = format!(
                    "`input_mapping` is not a valid expression: {e}; e.g. `body.payload` or `{{'id': body.id}}`"
                );
                issues.push(Issue::new("invalid_input_mapping", message).path("input_mapping"));
            }
        }
        if let Some(rate) = self.rate_limit_per_minute {
            if rate == 0 || rate > MAX_RATE_PER_MINUTE {
                let message = format!(
                    "`rate_limit_per_minute` must be between 1 and {MAX_RATE_PER_MINUTE}; leave it out for no limit"
                );
                issues.push(Issue::new("invalid_rate_limit", message).path("rate_limit_per_minute"));
            }
        }
        Ok(issues)
    }
}
