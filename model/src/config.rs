//! Node types and the typed configuration of each.
//!
//! The definition keeps `config` as raw JSON so one bad node cannot hide the problems of
//! the others; [`check_config`] parses it into the type's struct and reports what is wrong
//! with a JSON path relative to the node (`config.url`).

use crate::validate::{SyntaxCheck, Text};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Every node type the engine can run; each one's facts are its row in `node_types.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Noop,
    Delay,
    Http,
    Transform,
    Branch,
    Fail,
    WaitSignal,
    Task,
    Script,
    Subworkflow,
    Map,
    Approval,
}

impl NodeKind {
    pub const ALL: [NodeKind; 12] = [
        NodeKind::Noop,
        NodeKind::Delay,
        NodeKind::Http,
        NodeKind::Transform,
        NodeKind::Branch,
        NodeKind::Fail,
        NodeKind::WaitSignal,
        NodeKind::Task,
        NodeKind::Script,
        NodeKind::Subworkflow,
        NodeKind::Map,
        NodeKind::Approval,
    ];

    pub fn parse(s: &str) -> Option<NodeKind> {
        NodeKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// One line for the designer's palette.
    pub fn description(self) -> &'static str {
        self.spec().description
    }
}

impl std::fmt::Display for NodeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// An RFC 3339 instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

pub const HTTP_METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    #[serde(default = "default_method")]
    pub method: String,
    #[serde(default)]
    pub url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

fn default_method() -> String {
    "GET".to_owned()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformConfig {
    #[serde(default)]
    pub expression: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchConfig {
    /// An expression whose value picks the outcome: `true`/`false`, or a label string.
    #[serde(default)]
    pub condition: String,
    /// The outcome labels edges may use; when empty, `true` and `false`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<String>,
}

impl BranchConfig {
    pub fn outcome_labels(&self) -> Vec<String> {
        if self.outcomes.is_empty() {
            vec!["true".to_owned(), "false".to_owned()]
        } else {
            self.outcomes.clone()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fail only the first `fail_attempts` attempts, then succeed; without it, always fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_attempts: Option<u32>,
}

/// The config of types that take none (`noop`, `wait_signal`): only `{}` is accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmptyConfig {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskConfig {
    #[serde(default)]
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

/// The `script` node: `source` is the body of a JavaScript function that sees `input`,
/// `nodes` and `instance`; what it returns is the node's output. The limits bound each attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptConfig {
    #[serde(default)]
    pub source: String,
    /// The attempt's heap, in MiB ([`SCRIPT_MEMORY_MB`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u32>,
    /// How long the script may run, in milliseconds ([`SCRIPT_TIMEOUT_MS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// A script's memory limit: (least, default, most) in MiB.
pub const SCRIPT_MEMORY_MB: (u32, u32, u32) = (1, 64, 1024);
/// A script's time limit: (least, default, most) in milliseconds.
pub const SCRIPT_TIMEOUT_MS: (u64, u64, u64) = (1, 1_000, 60_000);

impl ScriptConfig {
    /// The memory limit in MiB, the default when not given.
    pub fn memory_mb(&self) -> u32 {
        self.memory_mb.unwrap_or(SCRIPT_MEMORY_MB.1)
    }

    /// The time limit in milliseconds, the default when not given.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms.unwrap_or(SCRIPT_TIMEOUT_MS.1)
    }
}

/// Which version of the called workflow a `subworkflow` node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionRef {
    /// The latest published version when the node's attempt starts the child.
    #[default]
    Latest,
    Pinned(i64),
}

impl Serialize for VersionRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            VersionRef::Latest => s.serialize_str("latest"),
            VersionRef::Pinned(n) => s.serialize_i64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for VersionRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "latest" => Ok(VersionRef::Latest),
            Value::Number(n) => n
                .as_i64()
                .map(VersionRef::Pinned)
                .ok_or_else(|| serde::de::Error::custom("`version` must be \"latest\" or a whole number")),
            _ => Err(serde::de::Error::custom("`version` must be \"latest\" or a whole number")),
        }
    }
}

/// A `subworkflow` node: runs `workflow` as a child instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubworkflowConfig {
    /// The called workflow's id.
    #[serde(default)]
    pub workflow: String,
    #[serde(default)]
    pub version: VersionRef,
    /// An expression giving the child's input; without it, the parent's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
}

/// The nesting depth past which a `subworkflow` node refuses to start a child.
pub const MAX_SUBWORKFLOW_DEPTH: i32 = 16;

/// The workflow a `subworkflow` node's config calls, and the version it pins, if the config
/// is valid (its problems are reported by [`check_config`]).
pub fn subworkflow_target(config: &Value) -> Option<(String, VersionRef)> {
    parse::<SubworkflowConfig>(config).ok().filter(|c| is_uuid(&c.workflow)).map(|c| (c.workflow, c.version))
}

/// A problem with one node's config; `path` is relative to the node.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigProblem {
    pub path: String,
    pub message: String,
}

impl ConfigProblem {
    pub(crate) fn at(field: &str, message: impl Into<String>) -> Self {
        ConfigProblem { path: format!("config.{field}"), message: message.into() }
    }
}

/// Parses and checks the config of a node of `kind`, returning every problem found.
/// Expressions are compiled in this process (see [`check_config_with`]).
pub fn check_config(kind: NodeKind, config: &Value) -> Vec<ConfigProblem> {
    let expressions = crate::expr::Expressions::default();
    check_config_with(kind, config, &mut |text| expressions.check_text(text))
}

/// [`check_config`], with each expression's syntax judged by `syntax`.
pub fn check_config_with(kind: NodeKind, config: &Value, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    match kind {
        NodeKind::Noop | NodeKind::WaitSignal => parse::<EmptyConfig>(config).err().into_iter().collect(),
        NodeKind::Delay => with_parsed(config, check_delay),
        NodeKind::Http => with_parsed(config, |c| check_http(c, syntax)),
        NodeKind::Transform => {
            with_parsed(config, |c: TransformConfig| expression("expression", &c.expression, syntax))
        }
        NodeKind::Branch => with_parsed(config, |c| check_branch(c, syntax)),
        NodeKind::Fail => with_parsed(config, |c: FailConfig| {
            let message = c.message.map(Value::String).unwrap_or(Value::Null);
            templates("message", &message, syntax)
        }),
        NodeKind::Task => with_parsed(config, |c: TaskConfig| {
            let mut problems = required("queue", &c.queue);
            problems.extend(templates("input", c.input.as_ref().unwrap_or(&Value::Null), syntax));
            problems
        }),
        NodeKind::Script => with_parsed(config, check_script),
        NodeKind::Subworkflow => with_parsed(config, |c| check_subworkflow(c, syntax)),
        NodeKind::Map => with_parsed(config, |c| crate::map::check(c, syntax)),
        NodeKind::Approval => with_parsed(config, |c| crate::approval::check(c, syntax)),
    }
}

pub(crate) fn check_subworkflow(c: SubworkflowConfig, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let mut problems = required("workflow", &c.workflow);
    if problems.is_empty() && !is_uuid(&c.workflow) {
        problems.push(ConfigProblem::at("workflow", "`workflow` must be a workflow id (a UUID)"));
    }
    if let VersionRef::Pinned(n) = c.version {
        if n < 1 {
            problems.push(ConfigProblem::at("version", "`version` must be \"latest\" or at least 1"));
        }
    }
    if let Some(input) = &c.input {
        if input.trim().is_empty() {
            problems.push(ConfigProblem::at("input", "`input` is empty; omit it to pass the parent's input"));
        } else if let Err(e) = syntax(Text::Expression(input)) {
            problems.push(ConfigProblem::at("input", format!("`input` is not a valid expression: {e}")));
        }
    }
    problems
}

/// Whether `s` is a UUID in its hyphenated form (8-4-4-4-12 hex digits).
pub fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn with_parsed<T: DeserializeOwned>(config: &Value, check: impl FnOnce(T) -> Vec<ConfigProblem>) -> Vec<ConfigProblem> {
    match parse::<T>(config) {
        Ok(parsed) => check(parsed),
        Err(problem) => vec![problem],
    }
}

fn parse<T: DeserializeOwned>(config: &Value) -> Result<T, ConfigProblem> {
    T::deserialize(config)
        .map_err(|e| ConfigProblem { path: "config".to_owned(), message: format!("invalid config: {e}") })
}

/// A required expression field: present, and it compiles.
fn expression(field: &str, text: &str, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let mut problems = required(field, text);
    if problems.is_empty() {
        if let Err(e) = syntax(Text::Expression(text)) {
            problems.push(ConfigProblem::at(field, format!("`{field}` is not a valid expression: {e}")));
        }
    }
    problems
}

/// Every string in `value` (at `field`) that holds template syntax, compiled: each problem at
/// its own path (`body.user.name`, `headers.Authorization`).
pub(crate) fn templates(field: &str, value: &Value, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    match value {
        Value::String(text) if crate::expr::is_template(text) => {
            if let Err(e) = syntax(Text::Template(text)) {
                problems.push(ConfigProblem::at(field, format!("`{field}` is not a valid template: {e}")));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                problems.extend(templates(&format!("{field}[{i}]"), item, syntax));
            }
        }
        Value::Object(entries) => {
            for (key, item) in entries {
                problems.extend(templates(&format!("{field}.{key}"), item, syntax));
            }
        }
        _ => {}
    }
    problems
}

pub(crate) fn required(field: &str, value: &str) -> Vec<ConfigProblem> {
    if value.trim().is_empty() {
        vec![ConfigProblem::at(field, format!("`{field}` is required"))]
    } else {
        Vec::new()
    }
}

fn check_delay(c: DelayConfig) -> Vec<ConfigProblem> {
    match (&c.duration_ms, &c.until) {
        (None, None) => vec![ConfigProblem::at("duration_ms", "a delay needs `duration_ms` or `until`")],
        (Some(_), Some(_)) => vec![ConfigProblem::at("until", "give either `duration_ms` or `until`, not both")],
        (Some(ms), None) if *ms > crate::validate::MAX_DURATION_MS => {
            vec![ConfigProblem::at("duration_ms", "`duration_ms` is at most 10 years")]
        }
        (None, Some(until)) if chrono::DateTime::parse_from_rfc3339(until).is_err() => {
            vec![ConfigProblem::at("until", "`until` must be an RFC 3339 time such as 2026-01-31T09:00:00Z")]
        }
        _ => Vec::new(),
    }
}

fn check_http(c: HttpConfig, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    if !HTTP_METHODS.contains(&c.method.as_str()) {
        problems.push(ConfigProblem::at(
            "method",
            format!("unsupported method `{}`; use one of {}", c.method, HTTP_METHODS.join(", ")),
        ));
    }
    let url = c.url.trim();
    if url.is_empty() {
        problems.push(ConfigProblem::at("url", "`url` is required"));
    } else if !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("{{")) {
        problems.push(ConfigProblem::at("url", "`url` must start with http:// or https://"));
    } else {
        problems.extend(templates("url", &Value::String(c.url.clone()), syntax));
    }
    for (name, value) in &c.headers {
        problems.extend(templates(&format!("headers.{name}"), &Value::String(value.clone()), syntax));
    }
    problems.extend(templates("body", c.body.as_ref().unwrap_or(&Value::Null), syntax));
    problems
}

/// The script's own syntax is checked by the server, which can compile it (this crate also
/// runs in the browser, without a JavaScript engine of its own to compile with).
fn check_script(c: ScriptConfig) -> Vec<ConfigProblem> {
    let mut problems = required("source", &c.source);
    let (least, _, most) = SCRIPT_MEMORY_MB;
    if c.memory_mb.is_some_and(|mb| !(least..=most).contains(&mb)) {
        problems.push(ConfigProblem::at("memory_mb", format!("`memory_mb` must be between {least} and {most}")));
    }
    let (least, _, most) = SCRIPT_TIMEOUT_MS;
    if c.timeout_ms.is_some_and(|ms| !(least..=most).contains(&ms)) {
        problems.push(ConfigProblem::at("timeout_ms", format!("`timeout_ms` must be between {least} and {most}")));
    }
    problems
}

fn check_branch(c: BranchConfig, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let mut problems = expression("condition", &c.condition, syntax);
    if c.outcomes.iter().any(|o| o.trim().is_empty()) {
        problems.push(ConfigProblem::at("outcomes", "outcome labels must not be empty"));
    }
    problems
}

/// The outcome labels a branch node's edges may use, or `None` if `config` is not a valid
/// branch config (that problem is reported separately).
pub fn branch_outcomes(config: &Value) -> Option<Vec<String>> {
    parse::<BranchConfig>(config).ok().map(|c| c.outcome_labels())
}

/// The outcome labels edges out of a node of `kind` may use (`when: <label>`): a branch's, or an
/// approval's decision; `None` for a kind that has none (or a branch whose config is invalid).
pub fn node_outcomes(kind: NodeKind, config: &Value) -> Option<Vec<String>> {
    match kind {
        NodeKind::Branch => branch_outcomes(config),
        NodeKind::Approval => Some(crate::approval::OUTCOMES.iter().map(|o| (*o).to_owned()).collect()),
        _ => None,
    }
}
