//! Node types: what running one attempt of a node does. One function per type; each gets
//! the attempt's context and returns a [`NodeResult`]. Waiting is not done here: a node
//! that must wait returns [`NodeResult::Suspend`] and the engine records a durable timer,
//! a task or a signal wait instead of holding a thread.

pub mod http;
pub mod script;

use super::plan::PlanNode;
use crate::sandbox::{Job, Sandbox};
use crate::secrets::{Opened, Vault};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::sync::Arc;
use trellis_model::config::{
    BranchConfig, DelayConfig, FailConfig, NodeKind, SubworkflowConfig, TaskConfig, TransformConfig, VersionRef,
};

#[derive(Debug, Clone, PartialEq)]
pub enum NodeResult {
    Done {
        output: Value,
        outcome: Option<String>,
    },
    Failed {
        error: String,
        retryable: bool,
    },
    /// A call answered 429 or 503 with `Retry-After`: a retryable failure, unless the node's
    /// shared limit takes it as a pause (`limited.rs`).
    Busy {
        error: String,
        retry_after: std::time::Duration,
    },
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
    /// Ask people (an `approval` node): the rendered question, stored by the engine before the
    /// wait is committed (`engine/approvals/`).
    Approval {
        title: String,
        description: Option<String>,
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
    /// `{"input": ..., "instance": ..., "nodes": {"<id>": {"output": ..., "status": ...}}}`, with
    /// the nodes its config's texts can reach (every node for a script or a map: `context.rs`).
    pub context: Value,
    pub now: DateTime<Utc>,
    /// The secrets the node references, opened for this attempt (in scope as `secret` for
    /// its texts only; see `Sandbox::evaluate_with_secrets`).
    pub secrets: &'a Opened,
}

pub struct Runtime {
    pub http: http::HttpRunner,
    /// Where every expression, template and script of a node runs.
    pub sandbox: Arc<Sandbox>,
    pub secrets: Arc<Vault>,
}

impl Runtime {
    pub async fn run(&self, a: &Attempt<'_>) -> NodeResult {
        self.run_logged(a).await.0
    }

    /// Runs the attempt, with the lines it logged (only scripts log).
    pub async fn run_logged(&self, a: &Attempt<'_>) -> (NodeResult, Vec<String>) {
        let sandbox = &self.sandbox;
        let result = match a.node.kind {
            NodeKind::Noop => done(json!({})),
            NodeKind::Delay => config(a).map_or_else(|e| e, |c: DelayConfig| delay(c, a.now)),
            NodeKind::Http => self.http.run(a, sandbox).await,
            NodeKind::Transform => transform(sandbox, a).await.unwrap_or_else(|stopped| stopped),
            NodeKind::Branch => branch(sandbox, a).await.unwrap_or_else(|stopped| stopped),
            NodeKind::Fail => fail(sandbox, a).await.unwrap_or_else(|stopped| stopped),
            NodeKind::WaitSignal => NodeResult::Suspend(Suspend::Signal),
            NodeKind::Task => task(sandbox, a).await.unwrap_or_else(|stopped| stopped),
            NodeKind::Script => return script::run(sandbox, a).await,
            NodeKind::Subworkflow => subworkflow(sandbox, a).await.unwrap_or_else(|stopped| stopped),
            // The engine runs a map's items itself (`engine/map/`), never through here.
            NodeKind::Map => permanent("a map node runs through the engine's map runner".into()),
            NodeKind::Approval => approval(sandbox, a).await.unwrap_or_else(|stopped| stopped),
        };
        (result, Vec::new())
    }
}

/// Evaluates a node's `jobs` over the attempt's context in the sandbox, within the node's
/// `timeout_ms` (the engine's durable timer is what ends a timed-out attempt, as
/// `timed_out`; this deadline, just past it, only stops the worker). The user's error (a
/// typo, a type error) fails the attempt for good; the sandbox's (a limit, a crash) is
/// retried per the node's policy.
async fn evaluate(sandbox: &Sandbox, a: &Attempt<'_>, jobs: Vec<Job>) -> Result<Vec<Value>, NodeResult> {
    match sandbox.evaluate_with_secrets(jobs, &a.context, a.secrets, a.node.timeout_ms.map(backstop)).await {
        Ok(Ok(values)) => Ok(values),
        Ok(Err(error)) => Err(permanent(error)),
        Err(stopped) => Err(NodeResult::Failed { error: stopped.message, retryable: true }),
    }
}

/// The value of a node's one expression.
pub(super) async fn evaluate_one(sandbox: &Sandbox, a: &Attempt<'_>, job: Job) -> Result<Value, NodeResult> {
    Ok(evaluate(sandbox, a, vec![job]).await?.into_iter().next().unwrap_or(Value::Null))
}

/// A deadline just past a node's timeout, for work the durable timer ends.
pub fn backstop(timeout_ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(timeout_ms) + std::time::Duration::from_secs(1)
}

async fn transform(sandbox: &Sandbox, a: &Attempt<'_>) -> Result<NodeResult, NodeResult> {
    let c: TransformConfig = config(a)?;
    Ok(done(evaluate_one(sandbox, a, Job::Eval(c.expression)).await?))
}

async fn branch(sandbox: &Sandbox, a: &Attempt<'_>) -> Result<NodeResult, NodeResult> {
    let c: BranchConfig = config(a)?;
    let value = evaluate_one(sandbox, a, Job::Eval(c.condition.clone())).await?;
    Ok(choose(&c, value))
}

/// The outcome a branch's condition picked.
fn choose(c: &BranchConfig, value: Value) -> NodeResult {
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

async fn task(sandbox: &Sandbox, a: &Attempt<'_>) -> Result<NodeResult, NodeResult> {
    let c: TaskConfig = config(a)?;
    let input = match c.input {
        Some(template) => evaluate_one(sandbox, a, Job::Render(template)).await?,
        None => a.context.get("input").cloned().unwrap_or(Value::Null),
    };
    Ok(NodeResult::Suspend(Suspend::Task { queue: c.queue, input }))
}

/// The child's input (the `input` expression, else the parent's input); the engine starts it.
async fn subworkflow(sandbox: &Sandbox, a: &Attempt<'_>) -> Result<NodeResult, NodeResult> {
    let c: SubworkflowConfig = config(a)?;
    let Ok(workflow) = c.workflow.trim().parse() else {
        return Err(permanent(format!("`workflow` is not a workflow id: {}", c.workflow)));
    };
    let input = match c.input {
        Some(expression) => evaluate_one(sandbox, a, Job::Eval(expression)).await?,
        None => a.context.get("input").cloned().unwrap_or(Value::Null),
    };
    Ok(NodeResult::Suspend(Suspend::Child { workflow, version: c.version, input }))
}

/// The question an `approval` node asks: its title and description rendered over the run.
async fn approval(sandbox: &Sandbox, a: &Attempt<'_>) -> Result<NodeResult, NodeResult> {
    let c: trellis_model::approval::ApprovalConfig = config(a)?;
    let mut jobs = vec![Job::Render(Value::String(c.title))];
    jobs.extend(c.description.map(|d| Job::Render(Value::String(d))));
    let mut texts = evaluate(sandbox, a, jobs).await?.into_iter().map(|v| match v {
        Value::String(text) => text,
        other => other.to_string(),
    });
    let title = texts.next().unwrap_or_default();
    Ok(NodeResult::Suspend(Suspend::Approval { title, description: texts.next() }))
}

/// Fails the first `fail_attempts` attempts (retryably), then succeeds; without it, always
/// fails. Its `message` is a template over the attempt's context (`{{ input.order }}`).
async fn fail(sandbox: &Sandbox, a: &Attempt<'_>) -> Result<NodeResult, NodeResult> {
    let c: FailConfig = config(a)?;
    if c.fail_attempts.is_some_and(|n| a.attempt > n) {
        return Ok(done(json!({"attempt": a.attempt})));
    }
    let error = match c.message {
        Some(template) => match evaluate_one(sandbox, a, Job::Render(Value::String(template.clone()))).await {
            Ok(Value::String(message)) => message,
            Ok(other) => other.to_string(),
            Err(NodeResult::Failed { error, .. }) => format!("{template} ({error})"),
            Err(other) => return Err(other),
        },
        None => "failed on purpose".to_owned(),
    };
    Ok(NodeResult::Failed { error, retryable: true })
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
