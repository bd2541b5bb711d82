//! What a broker trigger does with a batch of messages: each one's input and dedupe key
//! (one sandbox request per message, only when the trigger has expressions), their starts
//! (concurrent, so the engine's start lane writes them together), their deliveries logged in
//! one transaction, and for each whether to acknowledge it.
//!
//! Exactly once: a start carries the idempotency key `broker:{trigger}:{key}` (the `dedupe`
//! value, else the broker's message id), recorded in the instance's own transaction, and the
//! message is acknowledged only after that commit. A redelivery (after a crash between
//! commit and acknowledgement, or a duplicate publish) gets the first instance back and is
//! logged `duplicate`. A message the trigger refuses (its body, its expressions, the input
//! schema, a limit) is acknowledged and logged, never redelivered forever; one the server
//! could not handle now (database, sandbox) is left for the broker to deliver again.

use super::message::{dedupe_key, id_key, Message, Refusal};
use super::spec::Broker;
use crate::engine::{Engine, EngineError, StartRequest};
use crate::sandbox::Job;
use crate::store::{DeliveryRow, DynStore};
use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use serde_json::{json, Value};
use std::sync::Arc;
use trellis_model::DeliveryOutcome;
use uuid::Uuid;

/// What became of one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Handled {
    pub outcome: DeliveryOutcome,
    pub instance: Option<Uuid>,
    pub reason: Option<String>,
    pub key: Option<String>,
    /// A rate limit refused it: take no more messages before then.
    pub retry_at: Option<DateTime<Utc>>,
}

impl Handled {
    /// Whether the broker may forget the message: everything but `error`.
    pub fn ack(&self) -> bool {
        self.outcome != DeliveryOutcome::Error
    }

    fn refused(outcome: DeliveryOutcome, reason: String, key: Option<String>) -> Handled {
        Handled { outcome, instance: None, reason: Some(reason), key, retry_at: None }
    }
}

/// A broker trigger's view of the engine and the log.
pub struct Ingest {
    pub store: DynStore,
    pub engine: Arc<Engine>,
    pub trigger: Uuid,
    pub workflow: Uuid,
}

/// A message ready to start.
struct Ready {
    input: Value,
    key: Option<String>,
}

impl Ingest {
    /// Handles `messages` (in order) and logs them; the answers are in the same order.
    pub async fn handle(&self, broker: Broker<'_>, messages: &[Message]) -> Vec<Handled> {
        let received_at = Utc::now();
        let ready = join_all(messages.iter().map(|m| self.prepare(broker, m))).await;
        // A key repeated within the batch starts after its first has committed, so it is
        // answered with that instance rather than racing it.
        let mut seen = std::collections::HashSet::new();
        let repeat: Vec<bool> =
            ready.iter().map(|r| matches!(r, Ok(Ready { key: Some(key), .. }) if !seen.insert(key.clone()))).collect();
        let mut handled: Vec<Option<Handled>> = vec![None; ready.len()];
        let mut later = Vec::new();
        let mut first = Vec::new();
        for (i, ready) in ready.into_iter().enumerate() {
            match ready {
                Err(refused) => handled[i] = Some(refused),
                Ok(ready) if repeat[i] => later.push((i, ready)),
                Ok(ready) => first.push((i, ready)),
            }
        }
        for wave in [first, later] {
            let started =
                join_all(wave.into_iter().map(|(i, ready)| async move { (i, self.start(ready).await) })).await;
            for (i, h) in started {
                handled[i] = Some(h);
            }
        }
        let handled: Vec<Handled> = handled.into_iter().map(|h| h.expect("every message is answered")).collect();
        self.log(received_at, &handled).await;
        handled
    }

    /// The message's input and key, or why it starts nothing.
    async fn prepare(&self, broker: Broker<'_>, message: &Message) -> Result<Ready, Handled> {
        let max_bytes = self.engine.config().max_input_bytes;
        let view = message
            .view(broker.source_field, max_bytes)
            .map_err(|Refusal(why)| Handled::refused(DeliveryOutcome::Rejected, why, message.message_id.clone()))?;
        let jobs: Vec<Job> = [broker.input, broker.dedupe].into_iter().flatten().map(|t| Job::Eval(t.into())).collect();
        let mut values = if jobs.is_empty() { Vec::new() } else { self.evaluate(broker, jobs, &view, message).await? };
        let dedupe = broker.dedupe.map(|_| values.pop().unwrap_or(Value::Null));
        let input = if broker.input.is_some() { values.pop().unwrap_or(Value::Null) } else { view };
        let key = match dedupe {
            Some(value) => Some(
                dedupe_key(&value).map_err(|Refusal(why)| Handled::refused(DeliveryOutcome::Rejected, why, None))?,
            ),
            None => id_key(message.message_id.as_deref()),
        };
        Ok(Ready { input, key })
    }

    /// The trigger's expressions over `{message}`, in the sandbox like every expression.
    async fn evaluate(
        &self,
        broker: Broker<'_>,
        jobs: Vec<Job>,
        view: &Value,
        message: &Message,
    ) -> Result<Vec<Value>, Handled> {
        let which = match (broker.input, broker.dedupe) {
            (Some(_), Some(_)) => "`input` or `dedupe` expression",
            (Some(_), None) => "`input` expression",
            _ => "`dedupe` expression",
        };
        let refused = |e: String| {
            let why = format!("the trigger's {which} failed on this message: {e}");
            Handled::refused(DeliveryOutcome::Rejected, why, message.message_id.clone())
        };
        match self.engine.sandbox().evaluate(jobs, &json!({"message": view}), None).await {
            Ok(Ok(values)) => Ok(values),
            Ok(Err(e)) => Err(refused(e)),
            Err(stopped) if stopped.cause.is_limit() => Err(refused(stopped.message)),
            Err(stopped) => Err(Handled::refused(
                DeliveryOutcome::Error,
                format!(
                    "the trigger's {which} could not be evaluated now ({stopped}); the broker will deliver it again"
                ),
                message.message_id.clone(),
            )),
        }
    }

    async fn start(&self, ready: Ready) -> Handled {
        let mut request = StartRequest::new(self.workflow, ready.input);
        request.idempotency_key = ready.key.as_ref().map(|key| format!("broker:{}:{key}", self.trigger));
        request.key_names_instance = true;
        let key = ready.key;
        match self.engine.start(request).await {
            Ok(started) => Handled {
                outcome: if started.repeated { DeliveryOutcome::Duplicate } else { DeliveryOutcome::Started },
                instance: Some(started.id),
                reason: None,
                key,
                retry_at: None,
            },
            Err(EngineError::RateLimited { detail, retry_at }) => {
                Handled { retry_at: Some(retry_at), ..Handled::refused(DeliveryOutcome::RateLimited, detail, key) }
            }
            Err(EngineError::InputRejected { detail, errors }) => {
                let each: Vec<String> = errors
                    .iter()
                    .take(5)
                    .map(|e| format!("{} at {}", e.message, e.path.as_deref().unwrap_or("input")))
                    .collect();
                Handled::refused(DeliveryOutcome::Rejected, format!("{detail}: {}", each.join("; ")), key)
            }
            // Nothing published yet (or the workflow went away): the message is kept for
            // when there is something to start, not dropped.
            Err(e @ (EngineError::Conflict(_) | EngineError::NotFound(_))) => {
                Handled::refused(DeliveryOutcome::Error, format!("{e}; the broker will deliver it again"), key)
            }
            Err(e @ (EngineError::Unavailable(_) | EngineError::Busy(_) | EngineError::Store(_))) => {
                let why = format!("the start could not be written now ({e}); the broker will deliver it again");
                Handled::refused(DeliveryOutcome::Error, why, key)
            }
            Err(EngineError::Internal(e)) => {
                tracing::error!(error = %e, trigger = %self.trigger, "a broker message's start failed");
                let why = "the start failed on the server (logged); the broker will deliver it again".to_owned();
                Handled::refused(DeliveryOutcome::Error, why, key)
            }
            Err(e) => Handled::refused(DeliveryOutcome::Rejected, e.to_string(), key),
        }
    }

    /// Logs the batch (best effort: a failed log write changes no acknowledgement) and
    /// counts it in `/metrics`.
    async fn log(&self, received_at: DateTime<Utc>, handled: &[Handled]) {
        let rows: Vec<DeliveryRow> = handled
            .iter()
            .map(|h| DeliveryRow {
                id: Uuid::now_v7(),
                trigger_id: self.trigger,
                received_at,
                verified: None,
                delivery_key: h.key.clone(),
                scheduled_at: None,
                outcome: h.outcome,
                status: None,
                reason: h.reason.as_deref().map(crate::engine::json::replace_nul_str),
                instance_id: h.instance,
                body_digest: None,
            })
            .collect();
        if let Err(e) = self.store.insert_deliveries(&rows).await {
            tracing::warn!(error = %e, trigger = %self.trigger, "could not log a batch of broker messages");
        }
        let metrics = &self.engine.bus.metrics;
        for outcome in DeliveryOutcome::ALL {
            let n = handled.iter().filter(|h| h.outcome == *outcome).count() as u64;
            if n > 0 {
                metrics.broker_messages(self.trigger, outcome.as_str(), n);
            }
        }
    }
}
