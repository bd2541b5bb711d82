//! Node types: what running one attempt of a node does. One function per type; each gets
//! the attempt's context and returns a [`NodeResult`]. Waiting is not done here: a node
//! that must wait returns [`NodeResult::Suspend`] and the engine records a durable timer,
//! a task or a signal wait instead of holding a thread.

pub mod eval;
pub mod http;
pub mod script;

pub use trellis_model::expr::Expressions;

use super::plan::PlanNode;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use trellis_model::config::{
    BranchConfig, DelayConfig, FailConfig, NodeKind, SubworkflowConfig, TaskConfig, TransformConfig, VersionRef,
};

#[derive(Debug, Clone, PartialEq)]
pub enum NodeResult {
    Done { output: Value, outcome: Option<String> },
    Failed { error: String, retryable: bool },
    Suspend(Suspend),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Suspend {
    Until(DateTime<Utc>),
    Signal,
    Task {
        queue: String,
        input: Value,
    },
    /// Start a child instance of `workflow` (the engine does it: see `engine/children.rs`).
    Child {
        workflow: uuid::Uuid,
        version: VersionRef,
        input: Value,
    },
}

/// One attempt of one node.
pub struct Attempt<'a> {
    pub node: &'a PlanNode,
    pub attempt: u32,
    /// `{instance}:{node}:{attempt}`: the same for every execution of this attempt.
    pub idempotency_key: String,
    /// W3C trace context naming this attempt's span, for calls it makes.
    pub traceparent: Option<String>,
    /// `{"input": ..., "nodes": {"<id>": {"output": ..., "status": ...}}}`
    pub context: Value,
    pub now: DateTime<Utc>,
}

pub struct Runtime {
    pub http: http::HttpRunner,
}

impl Runtime {
    pub async fn run(&self, a: &Attempt<'_>) -> NodeResult {
        match a.node.kind {
            NodeKind::Noop => done(json!({})),
            NodeKind::Delay => config(a).map_or_else(|e| e, |c: DelayConfig| delay(c, a.now)),
            NodeKind::Http => self.http.run(a).await,
            NodeKind::Transform => evaluated(a, transform).await,
            NodeKind::Branch => evaluated(a, branch).await,
            NodeKind::Fail => match config::<FailConfig>(a) {
                Ok(c) => {
                    let attempt = a.attempt;
                    evaluate(a, move |x, context| fail(c, x, context, attempt)).await.unwrap_or_else(|stopped| stopped)
                }
                Err(invalid) => invalid,
            },
            NodeKind::WaitSignal => NodeResult::Suspend(Suspend::Signal),
            NodeKind::Task => evaluated(a, task).await,
            NodeKind::Script => script::run(a).await.0,
            NodeKind::Subworkflow => evaluated(a, subworkflow).await,
        }
    }

    /// Runs the attempt like [`Runtime::run`], with the lines it logged (only scripts log).
    pub async fn run_logged(&self, a: &Attempt<'_>) -> (NodeResult, Vec<String>) {
        match a.node.kind {
            NodeKind::Script => script::run(a).await,
            _ => (self.run(a).await, Vec::new()),
        }
    }
}

/// Runs `work` over the attempt's context on the evaluator's pool, within the node's
/// `timeout_ms`. The engine's durable timer is what ends a timed-out attempt (as
/// `timed_out`); this deadline, just past it, only stops the attempt waiting.
async fn evaluate<T: Send + 'static>(
    a: &Attempt<'_>,
    work: impl FnOnce(&Expressions, &Value) -> T + Send + 'static,
) -> Result<T, NodeResult> {
    let context = a.context.clone();
    let run = eval::shared().run(move |x| work(x, &context));
    let result = match a.node.timeout_ms {
        Some(ms) => match tokio::time::timeout(backstop(ms), run).await {
            Ok(result) => result,
            Err(_) => return Err(NodeResult::Failed { error: format!("timed out after {ms} ms"), retryable: true }),
        },
        None => run.await,
    };
    result.map_err(|error| NodeResult::Failed { error, retryable: true })
}

/// Runs a node type whose config holds expressions: its config is read, then `run` works
/// on it over the attempt's context on the evaluator's pool (see [`evaluate`]).
async fn evaluated<C>(a: &Attempt<'_>, run: fn(C, &Expressions, &Value) -> NodeResult) -> NodeResult
where
    C: serde::de::DeserializeOwned + Send + 'static,
{
    match config(a) {
        Ok(c) => evaluate(a, move |x, context| run(c, x, context)).await.unwrap_or_else(|stopped| stopped),
        Err(invalid) => invalid,
    }
}

/// A deadline just past a node's timeout, for work the durable timer ends.
pub fn backstop(timeout_ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(timeout_ms) + std::time::Duration::from_secs(1)
}

fn transform(c: TransformConfig, x: &Expressions, context: &Value) -> NodeResult {
    match x.eval(&c.expression, context) {
        Ok(output) => done(output),
        Err(e) => permanent(e),
    }
}

fn branch(c: BranchConfig, x: &Expressions, context: &Value) -> NodeResult {
    let value = match x.eval(&c.condition, context) {
        Ok(v) => v,
        Err(e) => return permanent(e),
    };
    let label = match &value {
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        other => return permanent(format!("the condition gave {other}; it must give true, false or an outcome label")),
    };
    if !c.outcome_labels().contains(&label) {
        return permanent(format!(
            "the condition chose `{label}`, which is not one of the outcomes {:?}",
            c.outcome_labels()
        ));
    }
    NodeResult::Done { output: json!({"outcome": label}), outcome: Some(label) }
}

fn task(c: TaskConfig, x: &Expressions, context: &Value) -> NodeResult {
    let input = match &c.input {
        Some(template) => match x.render_value(template, context) {
            Ok(v) => v,
            Err(e) => return permanent(e),
        },
        None => context.get("input").cloned().unwrap_or(Value::Null),
    };
    NodeResult::Suspend(Suspend::Task { queue: c.queue, input })
}

/// The child's input (the `input` expression, else the parent's input); the engine starts it.
fn subworkflow(c: SubworkflowConfig, x: &Expressions, context: &Value) -> NodeResult {
    let Ok(workflow) = c.workflow.trim().parse() else {
        return permanent(format!("`workflow` is not a workflow id: {}", c.workflow));
    };
    let input = match &c.input {
        Some(expression) => match x.eval(expression, context) {
            Ok(v) => v,
            Err(e) => return permanent(e),
        },
        None => context.get("input").cloned().unwrap_or(Value::Null),
    };
    NodeResult::Suspend(Suspend::Child { workflow, version: c.version, input })
}

fn config<T: serde::de::DeserializeOwned>(a: &Attempt<'_>) -> Result<T, NodeResult> {
    serde_json::from_value(a.node.config.clone()).map_err(|e| permanent(format!("invalid config: {e}")))
}

fn done(output: Value) -> NodeResult {
    NodeResult::Done { output, outcome: None }
}

pub fn permanent(error: String) -> NodeResult {
    NodeResult::Failed { error, retryable: false }
}

fn delay(c: DelayConfig, now: DateTime<Utc>) -> NodeResult {
    let until = match (c.duration_ms, c.until) {
        (Some(ms), _) => now + crate::engine::effects::ms_duration(ms),
        (None, Some(t)) => match DateTime::parse_from_rfc3339(&t) {
            Ok(t) => t.with_timezone(&Utc),
            Err(e) => return permanent(format!("`until` is not an RFC 3339 time: {e}")),
        },
        (None, None) => return permanent("a delay needs `duration_ms` or `until`".into()),
    };
    NodeResult::Suspend(Suspend::Until(until))
}

/// Fails the first `fail_attempts` attempts (retryably), then succeeds; without it, always
/// fails. Its `message` is a template over the attempt's context (`{{ input.order }}`).
fn fail(c: FailConfig, x: &Expressions, context: &Value, attempt: u32) -> NodeResult {
    if c.fail_attempts.is_some_and(|n| attempt > n) {
        return done(json!({"attempt": attempt}));
    }
    let error = match c.message {
        Some(template) => x.render(&template, context).unwrap_or_else(|e| format!("{template} ({e})")),
        None => "failed on purpose".to_owned(),
    };
    NodeResult::Failed { error, retryable: true }
}
