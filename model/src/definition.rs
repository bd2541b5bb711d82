//! The workflow definition format (contract, "Definition format").
//!
//! Unknown fields are rejected everywhere so a typo (`"timout_ms"`) is an error, not a
//! silently ignored setting.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A workflow as drawn: nodes, the edges between them and instance-level settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Definition {
    #[serde(default)]
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub edges: Vec<Edge>,
    #[serde(default)]
    pub settings: Settings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub id: String,
    /// Kept as a string so that an unknown type is a validation error naming the node,
    /// rather than a deserialization error that stops at the first one.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The type's settings (an object): `delay` `{duration_ms | until}`, `http` `{method, url,
    /// headers, body}`, `transform` `{expression}`, `branch` `{condition, outcomes}`, `fail`
    /// `{message, fail_attempts}`, `task` `{queue, input}`, `subworkflow` `{workflow, version,
    /// input}` (see the `SubworkflowConfig` schema); `noop` and `wait_signal` take none.
    #[serde(default = "empty_object", skip_serializing_if = "is_empty_object")]
    pub config: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Running longer than this (ms) marks the node slow on the run view, the list
    /// (`?slow=true`) and in `slow` alerts; without it, k× its recent p95 does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after_ms: Option<u64>,
    /// The shared limit (`/api/v1/limits`) its attempts are held to, by name: for the node
    /// types that call out or run code (`NodeType::takes_limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

impl Node {
    /// A node of `kind` with an empty config; handy for building definitions in code.
    pub fn new(id: impl Into<String>, kind: impl Into<String>) -> Self {
        Node {
            id: id.into(),
            kind: kind.into(),
            name: None,
            config: empty_object(),
            position: None,
            retry: None,
            timeout_ms: None,
            stuck_after_ms: None,
            limit: None,
        }
    }

    /// The node's type, when it is one this build knows.
    pub fn known_kind(&self) -> Option<crate::config::NodeKind> {
        crate::config::NodeKind::parse(&self.kind)
    }

    pub fn with_config(mut self, config: Value) -> Self {
        self.config = config;
        self
    }
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

fn is_empty_object(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Total attempts including the first; 1 means "no retry".
    pub max_attempts: u32,
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    #[serde(default = "default_max_backoff_ms")]
    pub max_backoff_ms: u64,
}

fn default_backoff_ms() -> u64 {
    1_000
}

fn default_max_backoff_ms() -> u64 {
    60_000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub from: String,
    pub to: String,
    /// `success` (default), `failure`, `always`, or a `branch` outcome label.
    #[serde(default, skip_serializing_if = "EdgeWhen::is_default")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub when: EdgeWhen,
}

impl Edge {
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Self {
        Edge { from: from.into(), to: to.into(), when: EdgeWhen::Success }
    }

    /// How the edge is named in validation messages: `from->to`.
    pub fn label(&self) -> String {
        format!("{}->{}", self.from, self.to)
    }
}

/// When an edge lets its target run: on the source's success (default), failure, either,
/// or when a `branch` source chose the outcome with this label.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum EdgeWhen {
    #[default]
    Success,
    Failure,
    Always,
    Outcome(String),
}

impl EdgeWhen {
    fn is_default(&self) -> bool {
        *self == EdgeWhen::Success
    }

    pub fn as_str(&self) -> &str {
        match self {
            EdgeWhen::Success => "success",
            EdgeWhen::Failure => "failure",
            EdgeWhen::Always => "always",
            EdgeWhen::Outcome(label) => label,
        }
    }
}

impl From<String> for EdgeWhen {
    fn from(s: String) -> Self {
        match s.as_str() {
            "success" => EdgeWhen::Success,
            "failure" => EdgeWhen::Failure,
            "always" => EdgeWhen::Always,
            _ => EdgeWhen::Outcome(s),
        }
    }
}

impl Serialize for EdgeWhen {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EdgeWhen {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(EdgeWhen::from)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// At most this many instances of the workflow run at once, across all processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_instances: Option<u32>,
    #[serde(default)]
    pub on_limit: OnLimit,
    /// At most this many nodes of one instance run at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel_nodes: Option<u32>,
    /// The whole instance times out after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// What a start with a business `key` does about earlier instances with that key.
    /// Left out when it is the default, so existing definitions keep their normal form.
    #[serde(default, skip_serializing_if = "KeyReuse::is_default")]
    pub key_reuse: KeyReuse,
    /// An expression over the start's input (`input.customer_id`), evaluated once when an
    /// instance starts: instances with the same value run at most `max_per_key` at once.
    /// A value that is null, not a string/number/boolean, or fails to evaluate refuses the
    /// start (422).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_key: Option<String>,
    /// At most this many instances per `concurrency_key` value run at once (default 1);
    /// `on_limit` says whether further starts queue (FIFO per value) or are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_key: Option<u32>,
    /// The workflow started (once per failed run) when an instance ends `failed` or
    /// `timed_out`, with the failed instance's summary as its input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnFailure>,
    /// A JSON Schema (2020-12) every start's input must satisfy; a violation refuses the start
    /// (422 listing each path) and creates nothing. Only carried here: the server compiles and
    /// checks it (the schema crate stays out of the browser's build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
    /// At most `limit` instances start per `period_ms` (per `key` value); the others wait
    /// `queued`, in order, none dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<crate::flow::Window>,
    /// At most `limit` starts are accepted per `period_ms` (per `key` value); those past it are
    /// refused (REST: 429 with `Retry-After`; triggers: a `rate_limited` delivery).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<crate::flow::Window>,
    /// Queued instances are admitted highest level first (1–5, or an expression over the
    /// input giving one), in arrival order within a level; a waiting instance gains a level
    /// per `PRIORITY_AGING_MS` over newer starts, so none waits forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<crate::flow::Priority>,
    /// Starts of one key less than `period_ms` apart make one instance, with the last one's
    /// input; every start of the burst is answered that instance's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce: Option<crate::flow::Debounce>,
}

/// `settings.on_failure`: the failure handler workflow and the version it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OnFailure {
    /// The handler workflow's id.
    pub workflow: String,
    /// `"latest"` (resolved when the handler starts) or a version number.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub version: crate::config::VersionRef,
}

/// How deep a chain of failure handlers goes (a handler's run failing starts its own
/// workflow's handler): past it, no further handler starts.
pub const MAX_FAILURE_HANDLER_DEPTH: i32 = 8;

/// The business-key reuse policy. Whatever the policy, at most one instance per
/// (workflow, key) is queued, running or paused at a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum KeyReuse {
    /// A new start is refused only while an instance with the key is live.
    #[default]
    AllowDuplicate,
    /// Also refused once an instance with the key succeeded: only failures are re-run.
    AllowDuplicateFailedOnly,
    /// Refused if any instance ever had the key.
    RejectDuplicate,
    /// A live instance with the key is canceled and the new one starts.
    TerminateIfRunning,
}

impl KeyReuse {
    pub fn is_default(&self) -> bool {
        *self == KeyReuse::AllowDuplicate
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KeyReuse::AllowDuplicate => "allow_duplicate",
            KeyReuse::AllowDuplicateFailedOnly => "allow_duplicate_failed_only",
            KeyReuse::RejectDuplicate => "reject_duplicate",
            KeyReuse::TerminateIfRunning => "terminate_if_running",
        }
    }
}

/// What a start does when `max_concurrent_instances` is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OnLimit {
    /// Wait in FIFO order for a slot.
    #[default]
    Queue,
    /// Refuse the start with 429.
    Reject,
    /// Cancel the oldest running instance the start competes with (its key's, when the key is
    /// full) and run.
    Replace,
}
