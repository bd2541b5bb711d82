//! The `map` node: runs an inner node (or a sub-workflow) once per item of a list.
//!
//! `{"items": "<expression giving a list>", "node": {"type", "config"} | "workflow":
//! {"workflow", "version"?}, "max_parallel"?, "on_item_failure"?: "fail" | "continue"}`. The
//! inner node's expressions see `item` and `index` besides the usual context; a sub-workflow
//! child gets the item as its input. The map node's own `retry` and `timeout_ms` apply to each
//! item. Its output is `{"results": [...in item order], "errors": [{"index", "error"}]}`.

use crate::config::{check_config_with, required, ConfigProblem, NodeKind, SubworkflowConfig, VersionRef};
use crate::validate::{SyntaxCheck, Text};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Items running at once when `max_parallel` is not given.
pub const DEFAULT_MAX_PARALLEL: u32 = 10;
/// The most items of one map that may run at once.
pub const MAX_PARALLEL: u32 = 1_000;
/// The default cap on a map's items (the server's `TRELLIS_MAP_MAX_ITEMS` changes it).
pub const DEFAULT_MAX_ITEMS: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapConfig {
    /// An expression giving the list to map over.
    #[serde(default)]
    pub items: String,
    /// The node run per item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<InnerNode>,
    /// Or the workflow started per item, with the item as its input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<MapWorkflow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<u32>,
    #[serde(default)]
    pub on_item_failure: OnItemFailure,
}

impl MapConfig {
    pub fn max_parallel(&self) -> usize {
        self.max_parallel.unwrap_or(DEFAULT_MAX_PARALLEL).clamp(1, MAX_PARALLEL) as usize
    }
}

/// The node a map runs per item: any type but `map`, and none that waits on something
/// addressed to the node (a signal, an external task), which could not tell the items apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InnerNode {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub config: Value,
    /// The shared limit each item's attempt is held to (else the map node's own `limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

impl InnerNode {
    /// The inner node's type, if it is one a map may run.
    pub fn known_kind(&self) -> Option<NodeKind> {
        NodeKind::parse(&self.kind).filter(|k| may_run_inside(*k))
    }
}

/// The workflow a map starts per item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapWorkflow {
    #[serde(default)]
    pub workflow: String,
    #[serde(default)]
    pub version: VersionRef,
}

/// What a failed item (its retries spent) does to the map.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnItemFailure {
    /// The map fails, naming the first failed index; the items still running are canceled.
    #[default]
    Fail,
    /// The item's result is `null` and its error is listed; the map goes on.
    Continue,
}

/// Whether a map may run a node of `kind` per item.
pub fn may_run_inside(kind: NodeKind) -> bool {
    kind.spec().inside_map
}

/// The choices of `on_item_failure`, as the designer offers them.
pub const ON_ITEM_FAILURE: [&str; 2] = ["fail", "continue"];

/// The workflow a map's config starts per item, and the version it pins, if valid.
pub fn map_target(config: &Value) -> Option<(String, VersionRef)> {
    let c = MapConfig::deserialize(config).ok()?;
    c.workflow.filter(|w| crate::config::is_uuid(&w.workflow)).map(|w| (w.workflow, w.version))
}

/// Every problem with a map's config, paths relative to the node.
pub(crate) fn check(c: MapConfig, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let mut problems = required("items", &c.items);
    if problems.is_empty() {
        if let Err(e) = syntax(Text::Expression(&c.items)) {
            problems.push(ConfigProblem::at("items", format!("`items` is not a valid expression: {e}")));
        }
    }
    if let Some(n) = c.max_parallel {
        if !(1..=MAX_PARALLEL).contains(&n) {
            problems.push(ConfigProblem::at(
                "max_parallel",
                format!("`max_parallel` must be between 1 and {MAX_PARALLEL}"),
            ));
        }
    }
    match (&c.node, &c.workflow) {
        (Some(inner), None) => problems.extend(check_inner(inner, syntax)),
        (None, Some(w)) => {
            let sub = SubworkflowConfig { workflow: w.workflow.clone(), version: w.version, input: None };
            let nested = crate::config::check_subworkflow(sub, syntax);
            problems.extend(nested.into_iter().map(|p| under("workflow", p)));
        }
        (Some(_), Some(_)) => {
            problems.push(ConfigProblem::at("workflow", "give either `node` or `workflow`, not both"))
        }
        (None, None) => {
            problems.push(ConfigProblem::at("node", "a map needs a `node` or a `workflow` to run per item"))
        }
    }
    problems
}

fn check_inner(inner: &InnerNode, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let Some(kind) = NodeKind::parse(&inner.kind) else {
        let known: Vec<&str> = NodeKind::ALL.iter().filter(|k| may_run_inside(**k)).map(|k| k.as_str()).collect();
        let message = format!("unknown node type `{}`; a map runs one of {}", inner.kind, known.join(", "));
        return vec![ConfigProblem::at("node.type", message)];
    };
    if !may_run_inside(kind) {
        let why = match kind {
            NodeKind::Map => "a map cannot run a map per item; map over a sub-workflow that has one".to_owned(),
            other => format!("a map cannot run a `{other}` node per item (it waits on something addressed to the node); map over a sub-workflow that has one"),
        };
        return vec![ConfigProblem::at("node.type", why)];
    }
    let nested = check_config_with(kind, &inner.config, syntax);
    nested.into_iter().map(|p| under("node", p)).collect()
}

/// `problem` of a nested config, its path moved under `config.<field>`.
fn under(field: &str, problem: ConfigProblem) -> ConfigProblem {
    let rest = problem.path.strip_prefix("config").unwrap_or(&problem.path);
    let rest = if field == "workflow" { rest.to_owned() } else { format!(".config{rest}") };
    ConfigProblem { path: format!("config.{field}{rest}"), message: problem.message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(config: Value) -> Vec<String> {
        crate::config::check_config(NodeKind::Map, &config)
            .into_iter()
            .map(|p| format!("{}: {}", p.path, p.message))
            .collect()
    }

    #[test]
    fn a_map_over_a_node_is_valid() {
        let ok = json!({"items": "input.orders", "node": {"type": "transform", "config": {"expression": "item.id"}}});
        assert_eq!(problems(ok), Vec::<String>::new());
    }

    #[test]
    fn nested_problems_name_their_path_under_the_inner_node() {
        let bad = json!({"items": "input.orders", "node": {"type": "http", "config": {"url": "ftp://x"}}});
        assert_eq!(problems(bad), vec!["config.node.config.url: `url` must start with http:// or https://"]);
    }

    #[test]
    fn a_map_inside_a_map_and_signal_waits_are_refused() {
        for kind in ["map", "wait_signal", "task"] {
            let bad = json!({"items": "input.x", "node": {"type": kind, "config": {}}});
            let found = problems(bad);
            assert!(
                found.len() == 1 && found[0].starts_with("config.node.type: a map cannot run"),
                "{kind}: {found:?}"
            );
        }
    }

    #[test]
    fn max_parallel_and_the_choice_of_node_or_workflow_are_checked() {
        let zero = json!({"items": "input.x", "node": {"type": "noop", "config": {}}, "max_parallel": 0});
        assert_eq!(problems(zero), vec!["config.max_parallel: `max_parallel` must be between 1 and 1000"]);
        let neither = json!({"items": "input.x"});
        assert_eq!(problems(neither), vec!["config.node: a map needs a `node` or a `workflow` to run per item"]);
        let bad_workflow = json!({"items": "input.x", "workflow": {"workflow": "nope"}});
        assert_eq!(problems(bad_workflow), vec!["config.workflow.workflow: `workflow` must be a workflow id (a UUID)"]);
        let missing_items = json!({"node": {"type": "noop", "config": {}}});
        assert_eq!(problems(missing_items), vec!["config.items: `items` is required"]);
    }
}
