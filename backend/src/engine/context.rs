//! What an attempt's expressions see of its instance: `input`, and each node's `output` and
//! `status`. Pure: read from a snapshot, by the runner and by runs ahead alike.
//!
//! An attempt sees only what it can use, so that its cost does not grow with its instance's
//! width: the nodes its config's texts can reach (`scope::reached`, which errs towards more),
//! and the other nodes' outputs only as the count of their bytes the instance cap needs.

use super::plan::PlanNode;
use crate::store::Snapshot;
use serde_json::{json, Map, Value};
use trellis_model::config::NodeKind;
use trellis_model::expr::scope::{reached, Reached};

/// Whether a node type evaluates expressions over the instance (and so needs its state).
pub(super) fn reads_context(kind: NodeKind) -> bool {
    kind.spec().reads_context
}

/// What an attempt sees of its instance.
#[derive(Debug, Clone)]
pub struct Seen {
    /// What its expressions see (`Value::Null` for node types that read none).
    pub context: Value,
    /// The JSON bytes of the other nodes' stored outputs: what its output is held beside
    /// against the instance cap.
    pub others_bytes: usize,
}

impl Seen {
    /// For an attempt that reads nothing of its instance.
    pub fn nothing() -> Seen {
        Seen { context: Value::Null, others_bytes: 0 }
    }

    /// What an attempt of `node` sees of `snapshot`, whose stored outputs take
    /// `outputs_bytes` as JSON when that is known (a remembered instance), else counted.
    /// Nothing for the node types that read none of it (their outputs are small and fixed:
    /// held to the node cap only, however they were run).
    pub fn of(snapshot: &Snapshot, node: &PlanNode, outputs_bytes: Option<usize>) -> Seen {
        if !reads_context(node.kind) {
            return Seen::nothing();
        }
        Seen { context: context_for(snapshot, node), others_bytes: others_bytes(snapshot, &node.id, outputs_bytes) }
    }
}

/// The JSON bytes of `snapshot`'s stored outputs but `node`'s.
pub fn others_bytes(snapshot: &Snapshot, node: &str, outputs_bytes: Option<usize>) -> usize {
    match outputs_bytes {
        Some(total) => {
            let own = snapshot.nodes.iter().find(|r| r.node_id == node).map_or(0, |r| r.output_bytes());
            total.saturating_sub(own)
        }
        None => snapshot.nodes.iter().filter(|r| r.node_id != node).map(|r| r.output_bytes()).sum(),
    }
}

/// What `node`'s expressions see: every node for the types that hand their context on whole
/// (a script gets `nodes` as an object, a map its items' context), else the nodes its config's
/// texts can reach — a superset of what the sandbox narrows each evaluation to.
pub fn context_for(snapshot: &Snapshot, node: &PlanNode) -> Value {
    if matches!(node.kind, NodeKind::Script | NodeKind::Map) {
        return context(snapshot);
    }
    let mut texts = Vec::new();
    strings_in(&node.config, &mut texts);
    match reached(&texts, "nodes") {
        Reached::Whole => context(snapshot),
        Reached::Nothing => context_of(snapshot, |_| false),
        Reached::Keys(ids) => context_of(snapshot, |id| ids.iter().any(|k| k == id)),
    }
}

/// What expressions see: `input`, and each node's `output` and `status`.
pub fn context(snapshot: &Snapshot) -> Value {
    context_of(snapshot, |_| true)
}

/// The context with the nodes `keep` picks.
fn context_of(snapshot: &Snapshot, keep: impl Fn(&str) -> bool) -> Value {
    let mut nodes = Map::new();
    for row in snapshot.nodes.iter().filter(|r| keep(&r.node_id)) {
        let output = row.output.clone().unwrap_or(Value::Null);
        nodes.insert(row.node_id.clone(), json!({"output": output, "status": row.status}));
    }
    let instance = &snapshot.instance;
    let about = json!({
        "id": instance.id,
        "workflow_id": instance.workflow_id,
        "version": instance.version,
        "trace_id": instance.trace_id(),
        "started_by": instance.started_by,
    });
    json!({"input": instance.input.0, "nodes": nodes, "instance": about})
}

/// Every string in a node's config (its texts among them).
fn strings_in<'a>(value: &'a Value, into: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => into.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, into)),
        Value::Object(fields) => fields.values().for_each(|v| strings_in(v, into)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{InstanceRow, NodeRow};
    use std::sync::Arc;
    use trellis_model::json_len::serialized_len;
    use trellis_model::{InstanceStatus, NodeStatus};

    fn wide() -> Snapshot {
        let nodes = (0..50)
            .map(|i| {
                let output = Some(json!({"n": i}));
                Arc::new(NodeRow { output, ..NodeRow::fresh(format!("c{i}"), i, NodeStatus::Succeeded) })
            })
            .collect();
        Snapshot { instance: InstanceRow::for_test(InstanceStatus::Running), nodes }
    }

    fn node(kind: NodeKind, config: Value) -> PlanNode {
        PlanNode { id: "me".into(), kind, config, retry: None, timeout_ms: None, secrets: Vec::new(), limit: None }
    }

    #[test]
    fn an_attempt_sees_the_nodes_its_texts_reach_and_counts_the_rest() {
        let snapshot = wide();
        let http = node(NodeKind::Http, json!({"url": "http://x/{{ nodes.c3.output.n }}?i={{ instance.id }}"}));
        let seen = Seen::of(&snapshot, &http, None);
        assert_eq!(seen.context["nodes"], json!({"c3": {"output": {"n": 3}, "status": "succeeded"}}));
        assert_eq!(seen.context["instance"]["id"], json!(snapshot.instance.id));
        let all: usize = (0..50).map(|i| serialized_len(&json!({"n": i}))).sum();
        assert_eq!(seen.others_bytes, all, "every other output counts against the instance cap");
        let noop = node(NodeKind::Noop, json!({}));
        assert_eq!(Seen::of(&snapshot, &noop, Some(all)).others_bytes, 0, "a no-op reads nothing of it");
        // Its own stored output (an earlier attempt's) is not among the others.
        let own = node(NodeKind::Transform, json!({"expression": "input"}));
        let mine = PlanNode { id: "c0".into(), ..own };
        assert_eq!(Seen::of(&snapshot, &mine, Some(all)).others_bytes, all - serialized_len(&json!({"n": 0})));
        assert_eq!(Seen::of(&snapshot, &mine, Some(all)).context["nodes"], json!({}));
    }

    #[test]
    fn a_text_the_reading_cannot_bound_and_a_script_see_every_node() {
        let snapshot = wide();
        let loop_over = node(NodeKind::Transform, json!({"expression": "nodes | length"}));
        let script = node(NodeKind::Script, json!({"source": "return 1"}));
        let map = node(NodeKind::Map, json!({"items": "input.list", "node": {"type": "noop"}}));
        for whole in [loop_over, script, map] {
            assert_eq!(Seen::of(&snapshot, &whole, None).context, context(&snapshot), "{:?}", whole.kind);
        }
    }
}
