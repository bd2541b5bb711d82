//! Validation of a [`Definition`]: every problem at once, each naming what it is about.
//!
//! Errors make a definition unpublishable; warnings (unreachable or disconnected nodes) are
//! shown to the author but do not block.

mod flow;
mod graph;

use crate::config::{check_config_with, node_outcomes, NodeKind};
use crate::definition::{Definition, EdgeWhen, Node};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Size limits a definition must respect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_nodes: usize,
    pub max_edges: usize,
    /// Serialized size of the definition, in bytes.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_nodes: 1_000, max_edges: 10_000, max_bytes: 1024 * 1024 }
    }
}

pub const MAX_NODE_ID_LEN: usize = 64;
pub const MAX_NAME_LEN: usize = 200;
pub const MAX_ATTEMPTS: u32 = 100;
/// The longest duration a definition may name (timeouts, backoffs, delays): 10 years.
pub const MAX_DURATION_MS: u64 = 10 * 365 * 24 * 3600 * 1000;

/// One problem, in the shape of the contract's `errors` items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Issue {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `from->to` of the edge concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    /// Where in the definition, e.g. `nodes[2].config.url` or `edges[0].to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For `cycle`: the node ids of the cycle, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Vec<String>>,
}

impl Issue {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Issue { code: code.to_owned(), message: message.into(), node: None, edge: None, path: None, cycle: None }
    }

    pub fn node(mut self, id: &str) -> Self {
        self.node = Some(id.to_owned());
        self
    }

    pub fn edge(mut self, label: String) -> Self {
        self.edge = Some(label);
        self
    }

    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }
}

/// The outcome of [`validate`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Report {
    pub valid: bool,
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
}

impl Report {
    fn finish(errors: Vec<Issue>, warnings: Vec<Issue>) -> Report {
        Report { valid: errors.is_empty(), errors, warnings }
    }

    /// True when the only error is that the graph is empty: a brand-new draft.
    pub fn only_empty_graph(&self) -> bool {
        self.errors.iter().all(|e| e.code == "empty_graph")
    }
}

/// A text of a definition whose syntax is checked before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Text<'a> {
    /// Evaluated to a value: `input.amount > 100`.
    Expression(&'a str),
    /// A string with `{{ ... }}` in it: `https://api.example.com/users/{{ input.id }}`.
    Template(&'a str),
}

/// Checks one text's syntax: `Err` says what is wrong with it (where: line and column).
pub type SyntaxCheck<'a> = dyn FnMut(Text<'_>) -> Result<(), String> + 'a;

/// Validates `def` against `limits`, reporting every problem found. Expressions are
/// compiled here, in this process: what the designer (in the browser) does. The server
/// compiles them in its sandbox workers instead, through [`validate_with`].
pub fn validate(def: &Definition, limits: &Limits) -> Report {
    let expressions = crate::expr::Expressions::default();
    validate_with(def, limits, &mut |text| expressions.check_text(text))
}

/// [`validate`], with each expression's syntax judged by `syntax`, called in a fixed order
/// for the same definition (so a caller can collect the texts in one pass, compile them
/// elsewhere, and answer from the results in a second).
pub fn validate_with(def: &Definition, limits: &Limits, syntax: &mut SyntaxCheck<'_>) -> Report {
    let mut errors = Vec::new();
    if let Some(too_big) = check_limits(def, limits) {
        // Deeper analysis of an oversized graph is wasted work and a denial-of-service lever.
        return Report::finish(vec![too_big], Vec::new());
    }
    if def.nodes.is_empty() {
        errors.push(Issue::new("empty_graph", "the workflow has no nodes; add at least one").path("nodes"));
    }
    check_settings(def, &mut errors, syntax);
    let known = check_nodes(&def.nodes, &mut errors, syntax);
    check_edges(def, &known, &mut errors);
    errors.extend(graph::cycles(def));
    let warnings = graph::reachability_warnings(def);
    Report::finish(errors, warnings)
}

fn check_limits(def: &Definition, limits: &Limits) -> Option<Issue> {
    if def.nodes.len() > limits.max_nodes {
        return Some(
            Issue::new("too_many_nodes", format!("{} nodes exceed the limit of {}", def.nodes.len(), limits.max_nodes))
                .path("nodes"),
        );
    }
    if def.edges.len() > limits.max_edges {
        return Some(
            Issue::new("too_many_edges", format!("{} edges exceed the limit of {}", def.edges.len(), limits.max_edges))
                .path("edges"),
        );
    }
    let bytes = serde_json::to_vec(def).map(|v| v.len()).unwrap_or(usize::MAX);
    (bytes > limits.max_bytes)
        .then(|| Issue::new("too_large", format!("the definition is {bytes} bytes; the limit is {}", limits.max_bytes)))
}

/// Longer than any sensible `input.a.b` path: a guard, not a style rule.
const MAX_CONCURRENCY_KEY_EXPRESSION: usize = 1_000;

fn check_settings(def: &Definition, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    let s = &def.settings;
    let positive = [
        ("max_concurrent_instances", s.max_concurrent_instances.map(u64::from)),
        ("max_parallel_nodes", s.max_parallel_nodes.map(u64::from)),
        ("max_per_key", s.max_per_key.map(u64::from)),
        ("timeout_ms", s.timeout_ms),
    ];
    for (field, value) in positive {
        if value == Some(0) {
            errors.push(
                Issue::new("invalid_settings", format!("`{field}` must be at least 1; omit it for no limit"))
                    .path(format!("settings.{field}")),
            );
        }
    }
    if s.timeout_ms.is_some_and(|ms| ms > MAX_DURATION_MS) {
        errors.push(too_long("invalid_settings", "settings.timeout_ms".into()));
    }
    check_concurrency_key(s, errors, syntax);
    flow::check_windows(s, errors, syntax);
    if let Some(handler) = s.on_failure.as_ref().filter(|h| !crate::config::is_uuid(&h.workflow)) {
        let message = format!("`on_failure.workflow` must be a workflow id, not `{}`", handler.workflow);
        errors.push(Issue::new("invalid_settings", message).path("settings.on_failure.workflow"));
    }
    if let Some(crate::config::VersionRef::Pinned(n @ ..=0)) = s.on_failure.as_ref().map(|h| h.version) {
        let message = format!("`on_failure.version` must be \"latest\" or at least 1, not {n}");
        errors.push(Issue::new("invalid_settings", message).path("settings.on_failure.version"));
    }
    // The server compiles the schema too (`engine::input_schema`); this is the part the
    // designer can tell without a schema library.
    if s.input_schema.as_ref().is_some_and(|schema| !schema.is_object() && !schema.is_boolean()) {
        errors.push(
            Issue::new("invalid_settings", "`input_schema` must be a JSON Schema: an object (or true/false)")
                .path("settings.input_schema"),
        );
    }
}

/// A concurrency key is an expression; `max_per_key` means nothing without one.
fn check_concurrency_key(s: &crate::Settings, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    let issue =
        |field: &str, message: String| Issue::new("invalid_settings", message).path(format!("settings.{field}"));
    match s.concurrency_key.as_deref().map(str::trim) {
        None if s.max_per_key.is_some() => errors.push(issue(
            "max_per_key",
            "`max_per_key` needs a `concurrency_key` expression (e.g. `input.customer_id`); set one or omit `max_per_key`".into(),
        )),
        None => {}
        Some("") => errors.push(issue(
            "concurrency_key",
            "`concurrency_key` is empty; give an expression such as `input.customer_id`, or omit it".into(),
        )),
        Some(key) if key.len() > MAX_CONCURRENCY_KEY_EXPRESSION => errors.push(issue(
            "concurrency_key",
            format!("`concurrency_key` is longer than {MAX_CONCURRENCY_KEY_EXPRESSION} characters"),
        )),
        Some(key) => {
            if let Err(why) = syntax(Text::Expression(key)) {
                errors.push(issue("concurrency_key", format!("`concurrency_key` is not a valid expression: {why}")));
            }
        }
    }
}

/// Checks each node on its own; returns the kinds of the nodes whose ids are usable.
fn check_nodes<'a>(
    nodes: &'a [Node],
    errors: &mut Vec<Issue>,
    syntax: &mut SyntaxCheck<'_>,
) -> HashMap<&'a str, Option<NodeKind>> {
    let mut known = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        let at = |field: &str| format!("nodes[{i}]{field}");
        if !is_valid_node_id(&node.id) {
            errors.push(
                Issue::new(
                    "invalid_node_id",
                    format!("node id `{}` must be 1-{MAX_NODE_ID_LEN} letters, digits, `_` or `-`", node.id),
                )
                .node(&node.id)
                .path(at(".id")),
            );
        }
        let kind = NodeKind::parse(&node.kind);
        if known.insert(node.id.as_str(), kind).is_some() {
            errors.push(
                Issue::new("duplicate_node_id", format!("node id `{}` is used more than once", node.id))
                    .node(&node.id)
                    .path(at(".id")),
            );
        }
        match kind {
            None => errors.push(
                Issue::new(
                    "unknown_node_type",
                    format!(
                        "unknown node type `{}`; known types: {}",
                        node.kind,
                        NodeKind::ALL.map(NodeKind::as_str).join(", ")
                    ),
                )
                .node(&node.id)
                .path(at(".type")),
            ),
            Some(kind) => {
                for p in check_config_with(kind, &node.config, syntax) {
                    errors
                        .push(Issue::new("invalid_config", p.message).node(&node.id).path(at(&format!(".{}", p.path))));
                }
            }
        }
        check_node_options(node, &at, errors);
        errors.extend(crate::shared_limit::check_node_limit(node, kind, &at));
    }
    known
}

fn check_node_options(node: &Node, at: &dyn Fn(&str) -> String, errors: &mut Vec<Issue>) {
    let mut fail = |field: &str, message: String| {
        errors.push(Issue::new("invalid_node", message).node(&node.id).path(at(field)));
    };
    if node.name.as_deref().is_some_and(|n| n.chars().count() > MAX_NAME_LEN) {
        fail(".name", format!("the name is longer than {MAX_NAME_LEN} characters"));
    }
    if node.timeout_ms == Some(0) {
        fail(".timeout_ms", "`timeout_ms` must be at least 1; omit it for no timeout".into());
    }
    if node.timeout_ms.is_some_and(|ms| ms > MAX_DURATION_MS) {
        fail(".timeout_ms", too_long("", String::new()).message);
    }
    if node.stuck_after_ms == Some(0) {
        fail(".stuck_after_ms", "`stuck_after_ms` must be at least 1; omit it to judge by recent durations".into());
    }
    if node.stuck_after_ms.is_some_and(|ms| ms > MAX_DURATION_MS) {
        fail(".stuck_after_ms", too_long("", String::new()).message);
    }
    if let Some(retry) = &node.retry {
        if retry.max_attempts == 0 || retry.max_attempts > MAX_ATTEMPTS {
            fail(".retry.max_attempts", format!("`max_attempts` must be between 1 and {MAX_ATTEMPTS}"));
        }
        if retry.backoff_ms > retry.max_backoff_ms {
            fail(".retry.backoff_ms", "`backoff_ms` must not exceed `max_backoff_ms`".into());
        }
        if retry.max_backoff_ms > MAX_DURATION_MS {
            fail(".retry.max_backoff_ms", too_long("", String::new()).message);
        }
    }
}

fn too_long(code: &str, path: String) -> Issue {
    Issue::new(code, format!("durations are at most {MAX_DURATION_MS} ms (10 years)")).path(path)
}

pub fn is_valid_node_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_NODE_ID_LEN
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_edges(def: &Definition, known: &HashMap<&str, Option<NodeKind>>, errors: &mut Vec<Issue>) {
    let mut seen = HashSet::new();
    for (i, edge) in def.edges.iter().enumerate() {
        let issue = |code: &str, message: String, field: &str| {
            Issue::new(code, message).edge(edge.label()).path(format!("edges[{i}]{field}"))
        };
        for (end, id) in [("from", &edge.from), ("to", &edge.to)] {
            if !known.contains_key(id.as_str()) {
                errors.push(issue(
                    "unknown_node",
                    format!("edge {end} `{id}`: no node has this id"),
                    &format!(".{end}"),
                ));
            }
        }
        if edge.from == edge.to {
            errors.push(issue("self_loop", format!("node `{}` cannot lead to itself", edge.from), "").node(&edge.from));
        }
        if !seen.insert((edge.from.as_str(), edge.to.as_str())) {
            errors.push(issue("duplicate_edge", format!("there is already an edge {}", edge.label()), ""));
        }
        if let EdgeWhen::Outcome(label) = &edge.when {
            if let Some(message) = outcome_problem(def, known, &edge.from, label) {
                errors.push(issue("invalid_edge_condition", message, ".when"));
            }
        }
    }
}

/// Why an edge may not use `label` as its `when`, if it may not.
fn outcome_problem(
    def: &Definition,
    known: &HashMap<&str, Option<NodeKind>>,
    from: &str,
    label: &str,
) -> Option<String> {
    match known.get(from) {
        Some(Some(kind @ (NodeKind::Branch | NodeKind::Approval))) => {
            let config = &def.nodes.iter().find(|n| n.id == from)?.config;
            let outcomes = node_outcomes(*kind, config)?;
            (!outcomes.iter().any(|o| o == label))
                .then(|| format!("{kind} `{from}` has no outcome `{label}`; its outcomes are: {}", outcomes.join(", ")))
        }
        Some(Some(_)) => {
            Some(format!("`when: {label}` needs a branch or approval source; use success, failure or always"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
