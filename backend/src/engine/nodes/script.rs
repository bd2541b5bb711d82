//! The `script` node: a JavaScript function body run in the sandbox (`sandbox.rs`, which says
//! why QuickJS) on the script threads (`pool.rs`). The script sees `input`, `nodes`
//! (`nodes.<id>.output`, `.status`) and `instance` (`id`, `workflow_id`, `version`,
//! `trace_id`, and this attempt's `node` and `attempt`); what it returns is the node's output
//! (`undefined` is `null`). Its `console` lines are kept with the attempt.

mod logs;
mod pool;
pub mod sandbox;

pub use sandbox::{check_syntax, Failure, FailureKind, Limits, Position, Ran, Script};

use super::{Attempt, NodeResult};
use serde_json::{json, Value};
use trellis_model::config::ScriptConfig;

/// Runs one attempt of a script node: its result, and the lines it logged.
pub async fn run(a: &Attempt<'_>) -> (NodeResult, Vec<String>) {
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
        now: a.now,
        limits: limits(&config),
    };
    // The sandbox's interrupt ends the script at its limit; this only stops waiting should a
    // single long native call (which the interpreter cannot interrupt) outlast it, or the
    // node's own timeout come first (the engine's durable timer ends the attempt then).
    let mut wait = super::backstop(script.limits.timeout_ms);
    if let Some(ms) = a.node.timeout_ms {
        wait = wait.min(super::backstop(ms));
    }
    let ran = tokio::time::timeout(wait, run_script(script)).await;
    match ran {
        Ok(Ok(ran)) => (result(ran.output), ran.logs),
        Ok(Err(stopped)) => (NodeResult::Failed { error: stopped, retryable: true }, Vec::new()),
        Err(_) => {
            let error = format!("script ran longer than its limit (stopped waiting after {} ms)", wait.as_millis());
            (NodeResult::Failed { error, retryable: true }, Vec::new())
        }
    }
}

/// Runs `script` on the script threads (never on the caller's).
pub async fn run_script(script: Script) -> Result<Ran, String> {
    pool::shared().run(move || sandbox::run(&script)).await
}

/// Compiles each of `sources` on the script threads (in one job): the first syntax error of
/// each, if any.
pub async fn compile_all(sources: Vec<String>) -> Result<Vec<Result<(), Failure>>, String> {
    pool::shared().run(move || sources.iter().map(|source| check_syntax(source)).collect()).await
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
