//! Concurrency keys: the value of the workflow's `concurrency_key` expression that an
//! instance is counted under for `max_per_key`, fixed when the instance starts.
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

/// The key of an instance started with `input`, as JSON text (so the number 1 and the
/// string "1" are different keys); `None` if the workflow has no `concurrency_key`.
pub async fn evaluate(plan: &Plan, input: &Value, sandbox: &Sandbox) -> Result<Option<String>, EngineError> {
    let Some((expression, _)) = &plan.concurrency_key else { return Ok(None) };
    let context = json!({ "input": input });
    let value = sandbox
        .evaluate(vec![Job::Eval(expression.clone())], &context, None)
        .await
        .map_err(|stopped| match stopped.cause {
            // The key's own doing: a limit it met.
            cause if cause.is_limit() => refused(expression, format!("failed: {stopped}")),
            Cause::Busy => EngineError::Busy(format!("the concurrency key could not be evaluated: {stopped}")),
            _ => EngineError::Unavailable(format!("the concurrency key could not be evaluated: {stopped}")),
        })?
        .map_err(|e| refused(expression, format!("failed: {e}")))?
        .pop()
        .unwrap_or(Value::Null);
    match &value {
        Value::Null => Err(refused(
            expression,
            "is null for this input; every start must give it a value (a string, number or boolean)".into(),
        )),
        Value::Array(_) | Value::Object(_) => Err(refused(
            expression,
            format!(
                "must be a string, number or boolean, not {}",
                if value.is_array() { "an array" } else { "an object" }
            ),
        )),
        scalar => {
            let text = scalar.to_string();
            if text.len() > MAX_KEY_BYTES {
                return Err(refused(expression, format!("is {} bytes; the limit is {MAX_KEY_BYTES}", text.len())));
            }
            Ok(Some(text))
        }
    }
}

fn refused(expression: &str, what: String) -> EngineError {
    EngineError::Invalid(format!("the workflow's concurrency_key `{expression}` {what}"))
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
