//! What a webhook delivery does once its body is read: verify the signature (before any
//! other answer, so an unsigned caller learns nothing, not even that the trigger is paused),
//! check the trigger is live, answer a repeated delivery with the first instance, apply the
//! rate limit, map the body to the input, start the instance, and log the delivery whatever
//! happened.
//!
//! A delivery is repeated when its id was seen within the window or, for the GitHub preset
//! (whose signature covers neither the id nor a time), when its body's digest was: a captured
//! delivery replayed under a new id starts nothing. Starts carry the idempotency key
//! `webhook:{trigger}:{digest or delivery id}`, so two copies of one delivery racing past the
//! dedupe lookup still start one instance.

use super::signature;
use super::spec::WebhookSpec;
use crate::engine::{Engine, EngineError, StartRequest};
use crate::sandbox::{Job, Sandbox};
use crate::store::{DeliveryRow, TriggerRow, TriggerStore};
use chrono::{DateTime, Duration, Utc};
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};
use std::sync::Arc;
use trellis_model::DeliveryOutcome;
use uuid::Uuid;

/// How long a delivery id is remembered for deduplication.
pub fn dedupe_window() -> Duration {
    Duration::hours(24)
}

/// The answer to a delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// 202: a new instance.
    Started(Uuid),
    /// 200: this delivery id was seen; the instance it started.
    Duplicate(Uuid),
    /// A problem: `status`, what to fix, for 429 when to retry (seconds), and for an input
    /// that violates the workflow's `input_schema` each violation (the problem's `errors`).
    Refused { status: StatusCode, reason: String, retry_after: Option<u64>, errors: Vec<trellis_model::Issue> },
}

impl Answer {
    pub fn refused(status: StatusCode, reason: impl Into<String>) -> Answer {
        Answer::Refused { status, reason: reason.into(), retry_after: None, errors: Vec::new() }
    }

    fn outcome(&self) -> (DeliveryOutcome, Option<Uuid>, u16, Option<String>) {
        match self {
            Answer::Started(id) => (DeliveryOutcome::Started, Some(*id), 202, None),
            Answer::Duplicate(id) => (DeliveryOutcome::Duplicate, Some(*id), 200, None),
            // A rate limit's refusal says when to retry; a full concurrency limit's does not.
            Answer::Refused { status: StatusCode::TOO_MANY_REQUESTS, reason, retry_after: Some(_), .. } => {
                (DeliveryOutcome::RateLimited, None, 429, Some(reason.clone()))
            }
            Answer::Refused { status, reason, .. } if status.is_server_error() => {
                (DeliveryOutcome::Failed, None, status.as_u16(), Some(reason.clone()))
            }
            Answer::Refused { status, reason, .. } => {
                (DeliveryOutcome::Rejected, None, status.as_u16(), Some(reason.clone()))
            }
        }
    }
}

/// One delivery as received.
pub struct Delivery<'a> {
    pub trigger: &'a TriggerRow,
    pub spec: &'a WebhookSpec,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    pub received_at: DateTime<Utc>,
}

/// Handles a delivery and logs it. `key` in the log is the verified delivery id.
pub async fn deliver(store: &dyn TriggerStore, engine: &Arc<Engine>, d: &Delivery<'_>) -> Answer {
    let (answer, verified) = match decide(store, engine, d).await {
        Ok(done) => done,
        Err((answer, verified)) => (answer, verified),
    };
    record(store, d.trigger.id, d.received_at, verified, &answer).await;
    answer
}

/// What the log keeps of a delivery's signature: `None` if it was not verified, else its
/// dedupe keys.
pub type Verified = Option<Keys>;

/// A verified delivery's dedupe keys.
#[derive(Debug, Clone)]
pub struct Keys {
    pub id: String,
    /// The signed body's SHA-256, for presets that sign only the body.
    pub digest: Option<String>,
}

type Step<T> = Result<T, (Answer, Verified)>;

async fn decide(store: &dyn TriggerStore, engine: &Arc<Engine>, d: &Delivery<'_>) -> Step<(Answer, Verified)> {
    let id = signature::verify(d.spec.preset, d.headers, d.body, &secrets(d.trigger, d.received_at), d.received_at)
        .map_err(|reason| (Answer::refused(StatusCode::UNAUTHORIZED, reason), None))?;
    let keys = Keys { id, digest: signature::body_digest(d.spec.preset, d.body) };
    let fail = |answer: Answer| (answer, Some(keys.clone()));
    if d.trigger.paused {
        let reason = "this trigger is paused; resume it (PATCH /api/v1/triggers/{id} with {\"paused\": false}) to accept deliveries";
        return Err(fail(Answer::refused(StatusCode::CONFLICT, reason)));
    }
    let since = d.received_at - dedupe_window();
    let first = store
        .delivered_instance(d.trigger.id, &keys.id, keys.digest.as_deref(), since)
        .await
        .map_err(|e| fail(internal(e)))?;
    if let Some(instance) = first {
        return Ok((Answer::Duplicate(instance), Some(keys)));
    }
    if let Some(limit) = d.spec.rate_limit_per_minute {
        rate_limit(store, d.trigger.id, limit, d.received_at).await.map_err(fail)?;
    }
    let input = input(d, engine.sandbox()).await.map_err(fail)?;
    let mut start = StartRequest::new(d.trigger.workflow_id, input);
    let dedupe_key = keys.digest.as_ref().map_or_else(|| keys.id.clone(), |digest| format!("sha256:{digest}"));
    start.idempotency_key = Some(format!("webhook:{}:{dedupe_key}", d.trigger.id));
    match engine.start(start).await {
        Ok(started) => Ok((Answer::Started(started.id), Some(keys))),
        Err(e) => Err(fail(start_refused(e))),
    }
}

/// The secrets a delivery may be signed with now: the current one, and the previous one
/// until its grace period ends.
pub fn secrets(trigger: &TriggerRow, now: DateTime<Utc>) -> Vec<&str> {
    let mut secrets: Vec<&str> = trigger.secret.as_deref().into_iter().collect();
    if trigger.previous_secret_until.is_some_and(|until| until > now) {
        secrets.extend(trigger.previous_secret.as_deref());
    }
    secrets
}

async fn rate_limit(
    store: &dyn TriggerStore,
    trigger: Uuid,
    per_minute: u32,
    now: DateTime<Utc>,
) -> Result<(), Answer> {
    let window = Duration::minutes(1);
    let (started, oldest) = store.started_since(trigger, now - window).await.map_err(internal)?;
    if started < i64::from(per_minute) {
        return Ok(());
    }
    // A slot frees up when the oldest start in the window leaves it.
    let wait = oldest.map_or(60, |t| (t + window - now).num_seconds() + 1).clamp(1, 60) as u64;
    Err(Answer::Refused {
        status: StatusCode::TOO_MANY_REQUESTS,
        reason: format!("this trigger starts at most {per_minute} instances a minute; retry in {wait} s"),
        retry_after: Some(wait),
        errors: Vec::new(),
    })
}

/// The instance's input: the JSON body (an empty body is `null`), or the value of the
/// trigger's input mapping over `{body, headers}`, evaluated in the sandbox.
async fn input(d: &Delivery<'_>, sandbox: &Sandbox) -> Result<Value, Answer> {
    let body: Value = if d.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(d.body)
            .map_err(|e| Answer::refused(StatusCode::BAD_REQUEST, format!("the body must be JSON: {e}")))?
    };
    let Some(mapping) = &d.spec.input_mapping else { return Ok(body) };
    let context = serde_json::json!({"body": body, "headers": header_map(d.headers)});
    let evaluated = sandbox.evaluate(vec![Job::Eval(mapping.clone())], &context, None);
    // A sender whose delivery waits behind a full sandbox is told to come back.
    let waited = std::time::Duration::from_secs(10) + std::time::Duration::from_millis(sandbox.settings().timeout_ms);
    let Ok(evaluated) = tokio::time::timeout(waited, evaluated).await else {
        return Err(busy("the server is too busy to evaluate the trigger's input mapping; retry later".into()));
    };
    let refused = |e: String| {
        Answer::refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("the trigger's input mapping failed on this body: {e}"),
        )
    };
    match evaluated {
        Ok(Ok(mut values)) => Ok(values.pop().unwrap_or(Value::Null)),
        Ok(Err(e)) => Err(refused(e)),
        Err(stopped) if stopped.cause.is_limit() => Err(refused(stopped.message)),
        Err(stopped) => {
            Err(busy(format!("the trigger's input mapping could not be evaluated ({stopped}); retry later")))
        }
    }
}

/// A 503 the sender should retry after a few seconds.
fn busy(reason: String) -> Answer {
    Answer::Refused { status: StatusCode::SERVICE_UNAVAILABLE, reason, retry_after: Some(5), errors: Vec::new() }
}

fn header_map(headers: &HeaderMap) -> Value {
    let mut map = Map::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match map.get_mut(name.as_str()) {
            Some(Value::String(existing)) => {
                existing.push_str(", ");
                existing.push_str(&value);
            }
            _ => {
                map.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    Value::Object(map)
}

fn start_refused(e: EngineError) -> Answer {
    match e {
        EngineError::Conflict(m) => Answer::refused(StatusCode::CONFLICT, m),
        EngineError::NotFound(m) => Answer::refused(StatusCode::NOT_FOUND, m),
        EngineError::Forbidden(m) => Answer::refused(StatusCode::FORBIDDEN, m),
        EngineError::LimitReached(m) => Answer::refused(StatusCode::TOO_MANY_REQUESTS, m),
        EngineError::RateLimited { detail, retry_at } => Answer::Refused {
            status: StatusCode::TOO_MANY_REQUESTS,
            reason: detail,
            retry_after: Some(crate::http::resources::instances::retry_after_secs(retry_at)),
            errors: Vec::new(),
        },
        EngineError::TooLarge(m) => Answer::refused(StatusCode::PAYLOAD_TOO_LARGE, m),
        EngineError::Invalid(m) => Answer::refused(StatusCode::UNPROCESSABLE_ENTITY, m),
        EngineError::InputRejected { detail, errors } => {
            Answer::Refused { status: StatusCode::UNPROCESSABLE_ENTITY, reason: detail, retry_after: None, errors }
        }
        EngineError::Unavailable(m) | EngineError::Busy(m) => busy(m),
        EngineError::Store(e) => internal(e),
        EngineError::Internal(e) => internal(e),
    }
}

fn internal(e: impl std::fmt::Display) -> Answer {
    tracing::error!(error = %e, "webhook delivery failed");
    Answer::refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the delivery could not be processed; it has been logged, retry later",
    )
}

/// Logs a delivery (best effort: a failed log write must not change the answer).
pub async fn record(
    store: &dyn TriggerStore,
    trigger: Uuid,
    received_at: DateTime<Utc>,
    verified: Verified,
    answer: &Answer,
) {
    let (outcome, instance_id, status, reason) = answer.outcome();
    // A reason may quote the sender's text; Postgres refuses NUL in it.
    let reason = reason.map(|r| crate::engine::json::replace_nul_str(&r));
    let row = DeliveryRow {
        id: Uuid::now_v7(),
        trigger_id: trigger,
        received_at,
        verified: Some(verified.is_some()),
        delivery_key: verified.as_ref().map(|k| k.id.clone()),
        scheduled_at: None,
        outcome,
        status: Some(i32::from(status)),
        reason,
        instance_id,
        body_digest: verified.and_then(|k| k.digest),
    };
    if let Err(e) = store.insert_delivery(&row).await {
        tracing::warn!(error = %e, %trigger, "could not log a webhook delivery");
    }
}
