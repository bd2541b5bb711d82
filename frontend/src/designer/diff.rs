//! What changed between two definitions: nodes and edges added, removed or changed, and for
//! changed nodes and settings every field that differs. Positions are layout, not behaviour:
//! a moved node is not "changed".

use serde_json::Value;
use std::collections::BTreeMap;
use trellis_model::{Definition, Edge, Node};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Added,
    Removed,
    Changed,
    Same,
}

impl Change {
    pub fn class(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
            Change::Same => "same",
        }
    }
}

/// One field that differs; `None` means absent on that side.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    /// Where, e.g. `config.url`, `retry.max_attempts`, `settings.timeout_ms`, `when`.
    pub path: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl FieldChange {
    pub fn describe(&self) -> String {
        let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "(none)".to_owned(), Value::to_string);
        format!("{}: {} → {}", self.path, show(&self.before), show(&self.after))
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    /// Every node of either side, by id.
    pub nodes: BTreeMap<String, (Change, Vec<FieldChange>)>,
    /// Every edge of either side, by (from, to).
    pub edges: BTreeMap<(String, String), (Change, Vec<FieldChange>)>,
    pub settings: Vec<FieldChange>,
}

impl Diff {
    pub fn node(&self, id: &str) -> Change {
        self.nodes.get(id).map_or(Change::Same, |(c, _)| *c)
    }

    pub fn edge(&self, from: &str, to: &str) -> Change {
        self.edges.get(&(from.to_owned(), to.to_owned())).map_or(Change::Same, |(c, _)| *c)
    }

    /// True when the two definitions behave the same.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty()
            && self.nodes.values().all(|(c, _)| *c == Change::Same)
            && self.edges.values().all(|(c, _)| *c == Change::Same)
    }

    /// Lines for the change list beside the canvas.
    pub fn summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (id, (change, fields)) in &self.nodes {
            match change {
                Change::Added => lines.push(format!("node {id} added")),
                Change::Removed => lines.push(format!("node {id} removed")),
                Change::Changed => lines.extend(fields.iter().map(|f| format!("node {id}: {}", f.describe()))),
                Change::Same => {}
            }
        }
        for ((from, to), (change, fields)) in &self.edges {
            match change {
                Change::Added => lines.push(format!("edge {from}→{to} added")),
                Change::Removed => lines.push(format!("edge {from}→{to} removed")),
                Change::Changed => lines.extend(fields.iter().map(|f| format!("edge {from}→{to}: {}", f.describe()))),
                Change::Same => {}
            }
        }
        lines.extend(self.settings.iter().map(|f| format!("settings: {}", f.describe())));
        lines
    }
}

pub fn diff(before: &Definition, after: &Definition) -> Diff {
    let mut out = Diff::default();
    let old: BTreeMap<&str, &Node> = before.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    let new: BTreeMap<&str, &Node> = after.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    for (id, node) in &old {
        let entry = match new.get(id) {
            None => (Change::Removed, Vec::new()),
            Some(now) => {
                let fields = field_changes("", &node_fields(node), &node_fields(now));
                (if fields.is_empty() { Change::Same } else { Change::Changed }, fields)
            }
        };
        out.nodes.insert((*id).to_owned(), entry);
    }
    for id in new.keys().filter(|id| !old.contains_key(*id)) {
        out.nodes.insert((*id).to_owned(), (Change::Added, Vec::new()));
    }

    let key = |e: &Edge| (e.from.clone(), e.to.clone());
    let old_edges: BTreeMap<_, &Edge> = before.edges.iter().map(|e| (key(e), e)).collect();
    let new_edges: BTreeMap<_, &Edge> = after.edges.iter().map(|e| (key(e), e)).collect();
    for (k, edge) in &old_edges {
        let entry = match new_edges.get(k) {
            None => (Change::Removed, Vec::new()),
            Some(now) if now.when != edge.when => (
                Change::Changed,
                vec![FieldChange {
                    path: "when".into(),
                    before: Some(Value::String(edge.when.as_str().to_owned())),
                    after: Some(Value::String(now.when.as_str().to_owned())),
                }],
            ),
            Some(_) => (Change::Same, Vec::new()),
        };
        out.edges.insert(k.clone(), entry);
    }
    for k in new_edges.keys().filter(|k| !old_edges.contains_key(*k)) {
        out.edges.insert(k.clone(), (Change::Added, Vec::new()));
    }

    let settings = |d: &Definition| serde_json::to_value(&d.settings).unwrap_or(Value::Null);
    out.settings = field_changes("settings", &settings(before), &settings(after));
    out
}

/// A node as JSON without its position.
fn node_fields(node: &Node) -> Value {
    let mut v = serde_json::to_value(node).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.remove("position");
        map.remove("id");
    }
    v
}

/// Leaf-by-leaf differences of two JSON values; arrays compare whole.
fn field_changes(prefix: &str, before: &Value, after: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk(prefix, Some(before), Some(after), &mut out);
    out
}

fn walk(path: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<FieldChange>) {
    match (before, after) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let sub = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                walk(&sub, a.get(k), b.get(k), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(FieldChange { path: path.to_owned(), before: a.cloned(), after: b.cloned() }),
    }
}

/// The definition the diff view draws: every node and edge of `after`, plus those only in `before`
/// (where they were), so removed parts stay visible in their own colour.
pub fn union(before: &Definition, after: &Definition) -> Definition {
    let mut out = after.clone();
    for node in &before.nodes {
        if !out.nodes.iter().any(|n| n.id == node.id) {
            out.nodes.push(node.clone());
        }
    }
    for edge in &before.edges {
        if !out.edges.iter().any(|e| e.from == edge.from && e.to == edge.to) {
            out.edges.push(edge.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use trellis_model::{EdgeWhen, Position};

    fn v1() -> Definition {
        serde_json::from_value(json!({
            "nodes": [
                {"id": "a", "type": "noop", "position": {"x": 0, "y": 0}},
                {"id": "b", "type": "http", "config": {"url": "https://x", "method": "GET"}},
                {"id": "gone", "type": "noop"}
            ],
            "edges": [{"from": "a", "to": "b"}, {"from": "a", "to": "gone"}],
            "settings": {"max_parallel_nodes": 4}
        }))
        .unwrap()
    }

    #[test]
    fn identical_definitions_have_no_changes() {
        let d = diff(&v1(), &v1());
        assert!(d.is_empty());
        assert!(d.summary().is_empty());
        assert_eq!(d.node("a"), Change::Same);
    }

    #[test]
    fn moving_a_node_is_not_a_change() {
        let mut moved = v1();
        moved.nodes[0].position = Some(Position { x: 300.0, y: 40.0 });
        assert!(diff(&v1(), &moved).is_empty());
    }

    #[test]
    fn additions_removals_and_field_changes_are_reported() {
        let mut v2 = v1();
        v2.nodes.retain(|n| n.id != "gone");
        v2.edges.retain(|e| e.to != "gone");
        v2.nodes[1].config = json!({"url": "https://y", "method": "GET"});
        v2.nodes[1].timeout_ms = Some(500);
        v2.nodes.push(Node::new("c", "noop"));
        v2.edges.push(Edge::new("b", "c"));
        v2.edges[0].when = EdgeWhen::Always;
        v2.settings.max_parallel_nodes = None;

        let d = diff(&v1(), &v2);
        assert_eq!(d.node("gone"), Change::Removed);
        assert_eq!(d.node("c"), Change::Added);
        assert_eq!(d.node("b"), Change::Changed);
        assert_eq!(d.node("a"), Change::Same);
        assert_eq!(d.edge("a", "gone"), Change::Removed);
        assert_eq!(d.edge("b", "c"), Change::Added);
        assert_eq!(d.edge("a", "b"), Change::Changed);
        let fields: Vec<_> = d.nodes["b"].1.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(fields, ["config.url", "timeout_ms"]);
        assert_eq!(d.nodes["b"].1[0].describe(), r#"config.url: "https://x" → "https://y""#);
        assert_eq!(d.settings[0].path, "settings.max_parallel_nodes");
        assert_eq!(d.settings[0].after, None);
        let summary = d.summary();
        assert!(summary.contains(&"node gone removed".to_owned()));
        assert!(summary.contains(&"edge a→b: when: \"success\" → \"always\"".to_owned()));
        assert!(summary.contains(&"settings: settings.max_parallel_nodes: 4 → (none)".to_owned()));
    }

    #[test]
    fn the_union_keeps_removed_parts_visible() {
        let mut v2 = v1();
        v2.nodes.retain(|n| n.id != "gone");
        v2.edges.retain(|e| e.to != "gone");
        let u = union(&v1(), &v2);
        assert_eq!(u.nodes.len(), 3);
        assert_eq!(u.edges.len(), 2);
    }
}
