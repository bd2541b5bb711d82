//! The rules of shared limits (`/limits`; bodies in `api/limits.rs`): what a name may be, what
//! a limit may hold, and which limits a definition's nodes name — for the server to check
//! that each exists, and for the designer to offer them.

use crate::api::SharedLimitSpec;
use crate::config::NodeKind;
use crate::flow::{MAX_WINDOW_LIMIT, MAX_WINDOW_PERIOD_MS};
use crate::map::MapConfig;
use crate::{Definition, Issue, Node};

/// The longest limit name.
pub const MAX_LIMIT_NAME_LEN: usize = 64;
/// The most attempts a limit lets run at once.
pub const MAX_LIMIT_CONCURRENCY: u32 = 100_000;

/// 1-64 letters, digits, `_`, `-` or `.`: it is a path segment and a metric label.
pub fn is_valid_limit_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LIMIT_NAME_LEN
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn name_problem(name: &str) -> Option<String> {
    (!is_valid_limit_name(name))
        .then(|| format!("a limit name is 1-{MAX_LIMIT_NAME_LEN} letters, digits, `_`, `-` or `.`, not `{name}`"))
}

/// What is wrong with a limit's settings, each at its field (`name` is checked too).
pub fn spec_problems(spec: &SharedLimitSpec) -> Vec<Issue> {
    let mut problems = Vec::new();
    let mut fail = |path: &str, message: String| problems.push(Issue::new("invalid_limit", message).path(path));
    if let Some(why) = name_problem(&spec.name) {
        fail("name", why);
    }
    if spec.concurrency.is_none() && spec.rate.is_none() {
        fail("concurrency", "give `concurrency`, `rate` or both; a limit of neither holds nothing back".into());
    }
    if let Some(n) = spec.concurrency.filter(|n| *n == 0 || *n > MAX_LIMIT_CONCURRENCY) {
        fail("concurrency", format!("`concurrency` must be 1 to {MAX_LIMIT_CONCURRENCY}, not {n}"));
    }
    if let Some(rate) = spec.rate {
        if rate.limit == 0 || rate.limit > MAX_WINDOW_LIMIT {
            fail("rate.limit", format!("`rate.limit` must be 1 to {MAX_WINDOW_LIMIT}, not {}", rate.limit));
        }
        if rate.period_ms == 0 || rate.period_ms > MAX_WINDOW_PERIOD_MS {
            fail(
                "rate.period_ms",
                format!(
                    "`rate.period_ms` must be 1 to {MAX_WINDOW_PERIOD_MS} (a day), not {}; e.g. 1000 for per second",
                    rate.period_ms
                ),
            );
        }
    }
    problems
}

/// The limit a node's attempts (a map's: each item's) are held to: a map's inner node's own,
/// else the node's.
pub fn node_limit(node: &Node) -> Option<String> {
    inner_limit(node).or_else(|| node.limit.clone())
}

fn inner_limit(node: &Node) -> Option<String> {
    if NodeKind::parse(&node.kind) != Some(NodeKind::Map) {
        return None;
    }
    let map: MapConfig = serde_json::from_value(node.config.clone()).ok()?;
    map.node?.limit
}

/// Every limit `def`'s nodes name: (node index, node id, the field's path, the name).
pub fn named_limits(def: &Definition) -> Vec<(usize, &str, String, String)> {
    let mut named = Vec::new();
    for (i, node) in def.nodes.iter().enumerate() {
        if let Some(name) = &node.limit {
            named.push((i, node.id.as_str(), format!("nodes[{i}].limit"), name.clone()));
        }
        if let Some(name) = inner_limit(node) {
            named.push((i, node.id.as_str(), format!("nodes[{i}].config.node.limit"), name));
        }
    }
    named
}

/// The model's checks of a node's `limit`: a well-formed name, on a type that takes one.
pub(crate) fn check_node_limit(node: &Node, kind: Option<NodeKind>, at: &dyn Fn(&str) -> String) -> Vec<Issue> {
    let mut problems = Vec::new();
    let issue = |field: &str, message: String| Issue::new("invalid_node", message).node(&node.id).path(at(field));
    if let Some(name) = &node.limit {
        if let Some(why) = name_problem(name) {
            problems.push(issue(".limit", why));
        }
        if let Some(kind) = kind.filter(|k| !k.spec().takes_limit) {
            let takers: Vec<&str> =
                NodeKind::ALL.into_iter().filter(|k| k.spec().takes_limit).map(NodeKind::as_str).collect();
            problems.push(issue(
                ".limit",
                format!("a `{}` node takes no `limit`; only {} nodes do", kind.as_str(), takers.join(", ")),
            ));
        }
    }
    if let Some(name) = inner_limit(node) {
        if let Some(why) = name_problem(&name) {
            problems.push(issue(".config.node.limit", why));
        }
    }
    problems
}
