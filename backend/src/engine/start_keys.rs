//! The keys a start is counted under, fixed when it starts: the `concurrency_key` value for
//! `max_per_key`, the `throttle.key` value for the throttle's windows, the `rate_limit.key`
//! value for the rate limit's, the `debounce.key` value for its bursts, and its `priority`
//! level. Every expression is evaluated in one sandbox request.
//!
//! The rule for a value that cannot be a key is to refuse the start (422) rather than
//! group such instances under null: a typo in the expression or a start without the field
//! would otherwise put every such instance under one key, silently serializing them.

use super::error::EngineError;
use super::plan::Plan;
use crate::sandbox::{Cause, Job, Sandbox};
use crate::store::Held;
use serde_json::{json, Value};

/// Longest key kept, as JSON text: enough for ids and names, bounded for the index.
pub const MAX_KEY_BYTES: usize = 512;

/// A start's keys, as JSON text (so the number 1 and the string "1" are different keys).
/// `None` where the workflow has no such limit; a window without a key expression counts
/// every start under the key `""`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StartKeys {
    pub concurrency: Option<String>,
    pub throttle: Option<String>,
    pub rate: Option<String>,
    /// The `priority` level (1–5); `None` when the workflow sets none.
    pub priority: Option<i64>,
    pub debounce: Option<String>,
}

impl StartKeys {
    /// What the workflow's `rate_limit` counts this start under (`limits`: the plan the keys
    /// were evaluated with); `None` without a rate limit.
    pub fn rate_check(&self, limits: &Plan) -> Option<crate::store::RateCheck> {
        let (key, window) = self.rate.clone().zip(limits.rate_limit.as_ref())?;
        Some(crate::store::RateCheck { window: super::plan::time_window(window), key })
    }
}

/// Which of the start's keys an expression gives.
#[derive(Clone, Copy)]
enum Slot {
    Concurrency,
    Throttle,
    Rate,
    Priority,
    Debounce,
}

/// The keys of an instance started with `input` under `plan`'s limits (its workflow's
/// latest version).
pub async fn evaluate(plan: &Plan, input: &Value, sandbox: &Sandbox) -> Result<StartKeys, EngineError> {
    use trellis_model::flow::Priority;
    let mut keys = StartKeys {
        concurrency: None,
        throttle: plan.throttle.as_ref().map(|_| String::new()),
        rate: plan.rate_limit.as_ref().map(|_| String::new()),
        debounce: plan.debounce.as_ref().map(|_| String::new()),
        priority: match &plan.priority {
            Some(Priority::Level(n)) => Some(*n),
            _ => None,
        },
    };
    let priority = match &plan.priority {
        Some(Priority::Expression(e)) => Some(e.as_str()),
        _ => None,
    };
    let expressions: Vec<(Slot, &'static str, &str)> = [
        (Slot::Concurrency, "concurrency_key", plan.concurrency_key.as_ref().map(|(e, _)| e.as_str())),
        (Slot::Throttle, "throttle.key", plan.throttle.as_ref().and_then(|w| w.key.as_deref())),
        (Slot::Rate, "rate_limit.key", plan.rate_limit.as_ref().and_then(|w| w.key.as_deref())),
        (Slot::Priority, "priority", priority),
        (Slot::Debounce, "debounce.key", plan.debounce.as_ref().and_then(|d| d.key.as_deref())),
    ]
    .into_iter()
    .filter_map(|(slot, setting, expression)| expression.map(|e| (slot, setting, e)))
    .collect();
    if expressions.is_empty() {
        return Ok(keys);
    }
    let values = match values_of(&expressions, input, sandbox).await {
        Ok(values) => values,
        // One request for all; when it fails, ask one by one to name the one at fault.
        Err(_) if expressions.len() > 1 => {
            let mut values = Vec::with_capacity(expressions.len());
            for expression in &expressions {
                values.extend(values_of(std::slice::from_ref(expression), input, sandbox).await?);
            }
            values
        }
        Err(e) => return Err(e),
    };
    for ((slot, setting, expression), value) in expressions.iter().zip(values) {
        match slot {
            Slot::Concurrency => keys.concurrency = Some(key_text(setting, expression, value)?),
            Slot::Throttle => keys.throttle = Some(key_text(setting, expression, value)?),
            Slot::Rate => keys.rate = Some(key_text(setting, expression, value)?),
            Slot::Priority => keys.priority = Some(level(expression, &value)?),
            Slot::Debounce => keys.debounce = Some(key_text(setting, expression, value)?),
        }
    }
    Ok(keys)
}

/// The values of `expressions` over `input`, in one sandbox request; an error names the first
/// expression (the request's only one when the caller asks one by one).
async fn values_of(
    expressions: &[(Slot, &'static str, &str)],
    input: &Value,
    sandbox: &Sandbox,
) -> Result<Vec<Value>, EngineError> {
    let (_, setting, expression) = expressions[0];
    let jobs = expressions.iter().map(|(_, _, e)| Job::Eval((*e).to_owned())).collect();
    let mut values = sandbox
        .evaluate(jobs, &json!({ "input": input }), None)
        .await
        .map_err(|stopped| match stopped.cause {
            // The key's own doing: a limit it met.
            cause if cause.is_limit() => refused(setting, expression, format!("failed: {stopped}")),
            Cause::Busy => EngineError::Busy(format!("the {setting} could not be evaluated: {stopped}")),
            _ => EngineError::Unavailable(format!("the {setting} could not be evaluated: {stopped}")),
        })?
        .map_err(|e| refused(setting, expression, format!("failed: {e}")))?;
    values.resize(expressions.len(), Value::Null);
    Ok(values)
}

/// A key's value as the JSON text it is kept as, or why it cannot be a key.
fn key_text(setting: &str, expression: &str, value: Value) -> Result<String, EngineError> {
    match &value {
        Value::Null => Err(refused(
            setting,
            expression,
            "is null for this input; every start must give it a value (a string, number or boolean)".into(),
        )),
        Value::Array(_) | Value::Object(_) => Err(refused(
            setting,
            expression,
            format!(
                "must be a string, number or boolean, not {}",
                if value.is_array() { "an array" } else { "an object" }
            ),
        )),
        scalar => {
            let text = scalar.to_string();
            if text.len() > MAX_KEY_BYTES {
                return Err(refused(
                    setting,
                    expression,
                    format!("is {} bytes; the limit is {MAX_KEY_BYTES}", text.len()),
                ));
            }
            Ok(text)
        }
    }
}

/// A `priority` expression's value as a level: a whole number 1–5.
fn level(expression: &str, value: &Value) -> Result<i64, EngineError> {
    use trellis_model::flow::{HIGHEST_PRIORITY, LOWEST_PRIORITY};
    match value.as_i64().or_else(|| value.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)) {
        Some(n) if (LOWEST_PRIORITY..=HIGHEST_PRIORITY).contains(&n) => Ok(n),
        _ => Err(refused(
            "priority",
            expression,
            format!(
                "gives {value} for this input; it must give a whole number {LOWEST_PRIORITY} to {HIGHEST_PRIORITY}"
            ),
        )),
    }
}

fn refused(setting: &str, expression: &str, what: String) -> EngineError {
    EngineError::Invalid(format!("the workflow's {setting} `{expression}` {what}"))
}

/// What a start or retry refused under `on_limit: reject` is told: the limit it met.
/// `limits`: the latest version's plan; `key`: the instance's key (JSON text).
pub fn limit_reached(limits: &Plan, held: Held, key: Option<&str>) -> String {
    match (held, &limits.concurrency_key, key) {
        (Held::Key, Some((expression, per_key)), Some(key)) => {
            format!("instances with concurrency key {expression} = {key} already run their limit of {per_key} (max_per_key)")
        }
        _ => format!(
            "the workflow already runs its limit of {} instances (max_concurrent_instances)",
            limits.instance_limit.unwrap_or_default()
        ),
    }
}

/// What a start refused by the workflow's `rate_limit` is told.
pub fn rate_limited(limits: &Plan, key: Option<&str>) -> String {
    let Some(window) = &limits.rate_limit else { return "the workflow's rate_limit is reached".into() };
    match (&window.key, key) {
        (Some(expression), Some(key)) => format!(
            "starts with rate_limit key {expression} = {key} reached the workflow's rate_limit of {}; try again after Retry-After",
            window.describe()
        ),
        _ => format!("the workflow's rate_limit of {} starts is reached; try again after Retry-After", window.describe()),
    }
}
