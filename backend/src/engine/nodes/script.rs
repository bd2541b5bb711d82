//! The `script` node: a JavaScript function body run in QuickJS inside a sandbox worker
//! (`sandbox/worker/quickjs.rs` says why QuickJS). The script sees `input`, `nodes`
//! (`nodes.<id>.output`, `.status`) and `instance` (`id`, `workflow_id`, `version`,
//! `trace_id`, and this attempt's `node` and `attempt`); what it returns is the node's output
//! (`undefined` is `null`). Its `console` lines are kept with the attempt.

use super::{Attempt, NodeResult};
use crate::sandbox::script::{Failure, FailureKind, Limits, Script};
use crate::sandbox::Sandbox;
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::config::ScriptConfig;

/// Past a script's own time limit (which the worker enforces), how long the server waits
/// before it kills the worker: converting a large result still takes a moment.
const GRACE: Duration = Duration::from_secs(1);

/// Runs one attempt of a script node: its result, and the lines it logged.
pub async fn run(sandbox: &Sandbox, a: &Attempt<'_>) -> (NodeResult, Vec<String>) {
    let config: ScriptConfig = match super::config(a) {
        Ok(c) => c,
        Err(invalid) => return (invalid, Vec::new()),
    };
    let part = |key: &str| a.context.get(key).cloned().unwrap_or(Value::Null);
    let mut instance = part("instance");
    if let Value::Object(fields) = &mut instance {
        fields.insert("node".into(), json!(a.node.id));
        fields.insert("attempt".into(), json!(a.attempt));
    }
    let script = Script {
        source: config.source.clone(),
        input: part("input"),
        nodes: part("nodes"),
        instance,
        item: part("item"),
        index: part("index"),
        now: a.now,
        limits: limits(&config),
    };
    // The node's own timeout, if shorter, is ended by the engine's durable timer; the
    // deadline only stops the worker just past it.
    let mut deadline = deadline(&script.limits);
    if let Some(ms) = a.node.timeout_ms {
        deadline = deadline.min(super::backstop(ms));
    }
    match sandbox.run_script(script, deadline).await {
        Ok(ran) => (result(ran.output), ran.logs),
        Err(stopped) => (NodeResult::Failed { error: stopped.message, retryable: true }, Vec::new()),
    }
}

/// How long the server lets a script with `limits` run before it kills its worker.
pub fn deadline(limits: &Limits) -> Duration {
    Duration::from_millis(limits.timeout_ms) + GRACE
}

/// The limits `config` asks for, the defaults where it is silent.
pub fn limits(config: &ScriptConfig) -> Limits {
    Limits { memory_mb: config.memory_mb(), timeout_ms: config.timeout_ms() }
}

fn result(output: Result<Value, Failure>) -> NodeResult {
    match output {
        Ok(output) => NodeResult::Done { output, outcome: None },
        Err(failure) => NodeResult::Failed { retryable: failure.retryable(), error: describe(&failure) },
    }
}

/// A failure as one line for the attempt's error.
pub fn describe(failure: &Failure) -> String {
    match (failure.kind, failure.at) {
        (FailureKind::Syntax, Some(at)) => {
            format!("SyntaxError at line {}, column {}: {}", at.line, at.column, failure.message)
        }
        (FailureKind::Syntax, None) => format!("SyntaxError: {}", failure.message),
        _ => failure.message.clone(),
    }
}
