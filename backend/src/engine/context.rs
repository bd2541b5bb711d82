//! What an attempt's expressions see of its instance: `input`, and each node's `output` and
//! `status`. Pure: read from a snapshot, by the runner and by runs ahead alike.

use crate::store::Snapshot;
use serde_json::{json, Map, Value};
use trellis_model::config::NodeKind;

/// Whether a node type evaluates expressions over the instance (and so needs its state).
pub(super) fn reads_context(kind: NodeKind) -> bool {
    kind.spec().reads_context
}

/// What expressions see: `input`, and each node's `output` and `status`.
pub fn context(snapshot: &Snapshot) -> Value {
    let mut nodes = Map::new();
    for row in &snapshot.nodes {
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
