//! The history entries and spans of one transition — pure, like `effects`, which calls it
//! with the rows before and after. Span ids are derived from what the span stands for
//! (instance, node, attempt, wait), so the transition that closes a span names the same id
//! as the one that opened it without storing ids anywhere.

use super::machine::{Command, Event};
use super::plan::Plan;
use crate::store::{InstanceRow, NewEvent, NodeRow};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use trellis_model::config::NodeKind;
use trellis_model::trace::{EventKind, InstanceChange, NodeChange, Span, SpanKind, SpanStatus};
use trellis_model::{InstanceStatus, NodeStatus, WaitKind};

/// The instance a transition belongs to, and when it happens.
pub struct Tracer<'a> {
    pub plan: &'a Plan,
    pub instance: &'a InstanceRow,
    pub now: DateTime<Utc>,
}

/// A 16-hex-digit span id derived from the instance and what the span stands for.
pub fn span_id(instance: uuid::Uuid, parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    hash.update(instance.as_bytes());
    for part in parts {
        hash.update([0]);
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut id: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    if id.bytes().all(|b| b == b'0') {
        id.replace_range(15.., "1"); // the all-zero id is invalid in W3C trace context
    }
    id
}

/// The span id of attempt `attempt` of `node`.
pub fn attempt_span_id(instance: uuid::Uuid, node: &str, attempt: i64) -> String {
    span_id(instance, &["node", node, &attempt.to_string()])
}

impl Tracer<'_> {
    pub fn trace_id(&self) -> String {
        self.instance.trace_id()
    }

    /// The instance span of the current run: a retried instance's later runs each get
    /// their own (ids are never reused, and the first run's closed when it finished).
    pub fn root_id(&self) -> String {
        self.run_span_id("instance")
    }

    fn run_span_id(&self, what: &str) -> String {
        match self.instance.run {
            ..=1 => span_id(self.instance.id, &[what]),
            run => span_id(self.instance.id, &[what, &run.to_string()]),
        }
    }

    pub fn attempt_id(&self, node: &str, attempt: i32) -> String {
        attempt_span_id(self.instance.id, node, i64::from(attempt))
    }

    fn span(&self, id: String, parent: Option<String>, name: String, kind: SpanKind, start: DateTime<Utc>) -> Span {
        Span {
            trace_id: self.trace_id(),
            span_id: id,
            parent_span_id: parent,
            name,
            kind,
            status: SpanStatus::Unset,
            start,
            end: None,
            attributes: Map::new(),
        }
    }

    fn root(&self) -> Span {
        let name = if self.plan.name.is_empty() { "instance".to_owned() } else { self.plan.name.clone() };
        // A retried run starts when it was retried.
        let start = if self.instance.run > 1 {
            self.instance.started_at.unwrap_or(self.instance.created_at)
        } else {
            self.instance.created_at
        };
        let mut span = self.span(self.root_id(), self.instance.parent_span_id.clone(), name, SpanKind::Instance, start);
        let attributes = &mut span.attributes;
        attributes.insert("trellis.instance_id".into(), json!(self.instance.id));
        attributes.insert("trellis.workflow_id".into(), json!(self.instance.workflow_id));
        attributes.insert("trellis.version".into(), json!(self.instance.version));
        if let Some(key) = &self.instance.business_key {
            attributes.insert("trellis.key".into(), json!(key));
        }
        if self.instance.run > 1 {
            attributes.insert("trellis.run".into(), json!(self.instance.run));
        }
        span
    }

    /// The wait for a slot, named after the limits that can hold the instance: the
    /// workflow's `max_concurrent_instances`, `max_per_key` when it has a concurrency key, and
    /// `throttle` when it has one.
    fn queue(&self) -> Span {
        // An instance has a key when the workflow's latest version had one at its start; its
        // own version's plan may not say so.
        let key = self.instance.concurrency_key.as_ref();
        let throttled = self.instance.throttle_key.is_some();
        let mut limits: Vec<&str> = Vec::new();
        if self.plan.instance_limit.is_some() || (key.is_none() && !throttled) {
            limits.push("max_concurrent_instances");
        }
        if key.is_some() {
            limits.push("max_per_key");
        }
        if throttled {
            limits.push("throttle");
        }
        let name = format!("queue wait: {}", limits.join(", "));
        let mut span =
            self.span(self.run_span_id("queue"), Some(self.root_id()), name, SpanKind::Queue, self.root().start);
        let attributes = &mut span.attributes;
        if let (true, Some(window)) = (throttled, &self.plan.throttle) {
            attributes.insert("trellis.throttle".into(), json!(window.describe()));
        }
        if limits.contains(&"max_concurrent_instances") {
            attributes.insert("trellis.limit".into(), json!("max_concurrent_instances"));
            attributes.insert("trellis.limit_value".into(), json!(self.plan.instance_limit));
        }
        if let Some(value) = key {
            // Stored as JSON text; shown as the value, as the API shows it.
            let value: serde_json::Value = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
            attributes.insert("trellis.concurrency_key_value".into(), value);
            if let Some((expression, per_key)) = &self.plan.concurrency_key {
                attributes.insert("trellis.concurrency_key".into(), json!(expression));
                attributes.insert("trellis.max_per_key".into(), json!(per_key));
            }
        }
        span
    }

    /// What creating the instance records: its span opens; a queued one also starts
    /// waiting for a slot.
    pub fn created(&self, queued: bool) -> Vec<NewEvent> {
        let mut events = vec![self.event(EventKind::SpanStart, &self.root())];
        if queued {
            events.push(self.instance_change(InstanceStatus::Queued, None, None));
            events.push(self.event(EventKind::SpanStart, &self.queue()));
        }
        events
    }

    fn event<T: serde::Serialize>(&self, kind: EventKind, data: &T) -> NewEvent {
        NewEvent { kind, at: self.now, data: serde_json::to_value(data).unwrap_or(Value::Null) }
    }

    fn ended(&self, mut span: Span, status: SpanStatus) -> NewEvent {
        span.status = status;
        span.end = Some(self.now.max(span.start));
        self.event(EventKind::SpanEnd, &span)
    }

    pub fn instance_change(
        &self,
        status: InstanceStatus,
        previous: Option<InstanceStatus>,
        error: Option<String>,
    ) -> NewEvent {
        let change = InstanceChange {
            workflow_id: self.instance.workflow_id.to_string(),
            status: status.as_str().to_owned(),
            previous: previous.map(|p| p.as_str().to_owned()),
            error,
            note: None,
        };
        self.event(EventKind::Instance, &change)
    }

    /// A retry began run `instance.run`: its span opens, the status changes from the last
    /// run's end, and a retry without a free slot starts waiting for one.
    pub fn retried(&self, previous: InstanceStatus, status: InstanceStatus) -> Vec<NewEvent> {
        let mut events = vec![self.event(EventKind::SpanStart, &self.root())];
        events.push(self.instance_change(status, Some(previous), None));
        if status == InstanceStatus::Queued {
            events.push(self.event(EventKind::SpanStart, &self.queue()));
        }
        events
    }

    /// The instance was admitted (`from_queue`: after waiting for a slot).
    pub fn admitted(&self, from_queue: bool) -> Vec<NewEvent> {
        let mut events = Vec::new();
        if from_queue {
            events.push(self.ended(self.queue(), SpanStatus::Ok));
        }
        let previous = from_queue.then_some(InstanceStatus::Queued);
        events.push(self.instance_change(InstanceStatus::Running, previous, None));
        events
    }

    /// The instance finished with `status`: its span closes (and its queue wait, if it
    /// never left the queue), then the status change, which is the last entry.
    pub fn finished(&self, before: InstanceStatus, status: InstanceStatus, error: Option<String>) -> Vec<NewEvent> {
        let mut events = Vec::new();
        if before == InstanceStatus::Queued {
            events.push(self.ended(self.queue(), SpanStatus::Unset));
        }
        let outcome = match status {
            InstanceStatus::Succeeded => SpanStatus::Ok,
            InstanceStatus::Canceled => SpanStatus::Unset,
            _ => SpanStatus::Error,
        };
        let mut root = self.root();
        if let Some(e) = &error {
            root.attributes.insert("error".into(), json!(e));
        }
        root.attributes.insert("trellis.status".into(), json!(status.as_str()));
        events.push(self.ended(root, outcome));
        events.push(self.instance_change(status, Some(before), error));
        events
    }
}

/// One node's rows around a transition, and how the transition touched it.
pub struct NodeStep<'a> {
    pub index: usize,
    pub old: &'a NodeRow,
    pub event: &'a Event,
    pub commands: &'a [Command],
    pub error: Option<&'a str>,
    pub output: Option<&'a Value>,
    pub execution_started_at: Option<DateTime<Utc>>,
    /// The attempt's log lines (`trellis.logs` on its span).
    pub logs: &'a [String],
}

impl Tracer<'_> {
    /// Records one node's spans and status change, and updates its span bookkeeping in
    /// `new` (dispatch time, current wait).
    pub fn node(&self, step: &NodeStep<'_>, new: &mut NodeRow, events: &mut Vec<NewEvent>) {
        let old = step.old;
        let attempt_changed = new.attempts != old.attempts;
        let status_changed = old.status != new.status;
        let ends_attempt =
            attempt_open(old) && (self.event_ends_attempt(step) || new.status.is_terminal() || attempt_changed);
        if old.wait_kind.is_some() && (ends_attempt || status_changed || attempt_changed) {
            if let Some(wait_kind) = old.wait_kind {
                events.push(self.ended(self.wait_span(old, wait_kind), SpanStatus::Ok));
            }
            new.wait_kind = None;
            new.wait_started_at = None;
        }
        if ends_attempt {
            events.push(self.attempt_end(step, new.status));
        }
        if status_changed || attempt_changed {
            let change = NodeChange {
                node: new.node_id.clone(),
                status: new.status.as_str().to_owned(),
                previous: old.status.as_str().to_owned(),
                attempt: new.attempts.max(0) as u32,
                error: new.status.is_failure().then(|| new.error.clone()).flatten(),
                outcome: new.outcome.clone(),
                items: None,
            };
            events.push(self.event(EventKind::Node, &change));
        }
        if new.attempts > old.attempts {
            new.dispatched_at = Some(self.now);
            events.push(self.event(EventKind::SpanStart, &self.attempt_span(new)));
        }
        if let Some(wait_kind) = self.new_wait(step, old.status, new.status) {
            new.wait_kind = Some(wait_kind);
            new.wait_started_at = Some(self.now);
            events.push(self.event(EventKind::SpanStart, &self.wait_span(new, wait_kind)));
        }
    }

    fn event_ends_attempt(&self, step: &NodeStep<'_>) -> bool {
        match step.event {
            Event::Succeeded { node, .. } | Event::Failed { node, .. } | Event::Lost { node, .. } => {
                *node == step.index
            }
            _ => false,
        }
    }

    /// The wait the node enters in this transition.
    fn new_wait(&self, step: &NodeStep<'_>, old: NodeStatus, new: NodeStatus) -> Option<WaitKind> {
        let retries =
            step.commands.iter().any(|c| matches!(c, Command::ScheduleRetry { node, .. } if *node == step.index));
        if retries {
            return Some(WaitKind::Backoff);
        }
        if matches!(step.event, Event::Suspended { node, .. } if *node == step.index) {
            // Only kinds that wait suspend; a signal stands for any other (there is none).
            return Some(self.plan.nodes[step.index].kind.spec().waits.unwrap_or(WaitKind::Signal));
        }
        (new == NodeStatus::Ready && old != NodeStatus::Ready).then_some(WaitKind::Slot)
    }

    fn attempt_span(&self, row: &NodeRow) -> Span {
        let spec = &self.plan.nodes[row.position.max(0) as usize];
        let start = row.dispatched_at.unwrap_or(self.now);
        let name = format!("{} {}", spec.kind, spec.id);
        let mut span =
            self.span(self.attempt_id(&row.node_id, row.attempts), Some(self.root_id()), name, SpanKind::Node, start);
        span.attributes.insert("trellis.node".into(), json!(spec.id));
        span.attributes.insert("trellis.node_type".into(), json!(spec.kind));
        span.attributes.insert("trellis.attempt".into(), json!(row.attempts));
        span
    }

    fn attempt_end(&self, step: &NodeStep<'_>, new_status: NodeStatus) -> NewEvent {
        let mut span = self.attempt_span(step.old);
        let status = match (step.event, new_status) {
            (Event::Succeeded { .. }, _) if self.event_ends_attempt(step) => SpanStatus::Ok,
            (_, NodeStatus::Canceled) => {
                span.attributes.insert("trellis.canceled".into(), json!(true));
                SpanStatus::Unset
            }
            _ => SpanStatus::Error,
        };
        if status == SpanStatus::Error {
            let error = step.error.map(str::to_owned).unwrap_or_else(|| "the instance timed out".to_owned());
            span.attributes.insert("error".into(), json!(error));
        }
        let is_http = self.plan.nodes[step.index].kind == NodeKind::Http;
        if let Some(code) = http_status(step.output, step.error).filter(|_| is_http) {
            span.attributes.insert("http.response.status_code".into(), json!(code));
        }
        if let Some(at) = step.execution_started_at {
            span.attributes.insert("trellis.execution_started_at".into(), json!(at));
        }
        if !step.logs.is_empty() {
            span.attributes.insert("trellis.logs".into(), json!(step.logs));
        }
        self.ended(span, status)
    }

    fn wait_span(&self, row: &NodeRow, wait_kind: WaitKind) -> Span {
        let attempt = row.attempts.to_string();
        // A node a retry reset waits for a slot with the attempt count of the last run.
        let run = self.instance.run.to_string();
        let parts: &[&str] = if self.instance.run > 1 {
            &["wait", &row.node_id, &attempt, wait_kind.as_str(), &run]
        } else {
            &["wait", &row.node_id, &attempt, wait_kind.as_str()]
        };
        let id = span_id(self.instance.id, parts);
        let attempt_span = Some(self.attempt_id(&row.node_id, row.attempts));
        let (name, kind, parent) = match wait_kind {
            WaitKind::Timer => ("timer", SpanKind::Timer, attempt_span),
            WaitKind::Task => ("task wait", SpanKind::Task, attempt_span),
            WaitKind::Signal => ("signal wait", SpanKind::Signal, attempt_span),
            WaitKind::Approval => ("approval wait", SpanKind::Approval, attempt_span),
            WaitKind::Child => ("child wait", SpanKind::Child, attempt_span),
            WaitKind::Backoff => ("retry backoff", SpanKind::Timer, Some(self.root_id())),
            WaitKind::Slot => ("queue wait: max_parallel_nodes", SpanKind::Queue, Some(self.root_id())),
        };
        let start = row.wait_started_at.unwrap_or(self.now);
        let mut span = self.span(id, parent, format!("{name} {}", row.node_id), kind, start);
        let attributes = &mut span.attributes;
        attributes.insert("trellis.node".into(), json!(row.node_id));
        attributes.insert("trellis.wait".into(), json!(wait_kind));
        let index = row.position.max(0) as usize;
        if wait_kind == WaitKind::Backoff {
            let next = row.attempts.max(0) as u32 + 1;
            attributes.insert("trellis.next_attempt".into(), json!(next));
            // Before jitter, which takes off up to half.
            attributes.insert("trellis.backoff_ms".into(), json!(self.plan.backoff_ms(index, next)));
        } else if wait_kind == WaitKind::Slot {
            attributes.insert("trellis.limit".into(), json!("max_parallel_nodes"));
            attributes.insert("trellis.limit_value".into(), json!(self.plan.max_parallel));
        }
        span
    }
}

/// An attempt span is open while the node runs, or waits inside its attempt (a timer,
/// a signal, a task) — not while it backs off before the next one.
fn attempt_open(row: &NodeRow) -> bool {
    match row.status {
        NodeStatus::Running => true,
        NodeStatus::Waiting => row.wait_kind != Some(WaitKind::Backoff),
        _ => false,
    }
}

/// The HTTP status an `http` attempt got: from its output, or from its `HTTP 503 ...` error.
fn http_status(output: Option<&Value>, error: Option<&str>) -> Option<u16> {
    if let Some(code) = output.and_then(|o| o.get("status")).and_then(Value::as_u64) {
        return u16::try_from(code).ok();
    }
    let rest = error?.strip_prefix("HTTP ")?;
    rest.get(..3)?.parse().ok()
}

#[cfg(test)]
mod tests;
