//! The retry preview: which nodes a retry would run again, by the very rule the engine applies
//! ([`trellis_model::retry`]), over the graph as drawn and the node statuses the history told.

use crate::run::RunState;
use std::collections::{BTreeSet, HashMap};
use trellis_model::retry::retry_nodes;
use trellis_model::{Definition, NodeStatus};

/// The ids of the nodes a retry from `from` (`failed`, `start` or a node id) runs again.
pub fn will_run_again(definition: &Definition, run: &RunState, from: &str) -> BTreeSet<String> {
    let statuses: HashMap<String, NodeStatus> = definition
        .nodes
        .iter()
        .filter_map(|n| NodeStatus::parse(run.node_status(&n.id)).map(|s| (n.id.clone(), s)))
        .collect();
    retry_nodes(definition, &statuses, from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::NodeRun;

    fn run(pairs: &[(&str, &str)]) -> RunState {
        let mut r = RunState::default();
        for (id, status) in pairs {
            r.nodes.insert(id.to_string(), NodeRun { status: status.to_string(), attempt: 1, ..NodeRun::default() });
        }
        r
    }

    fn def() -> Definition {
        serde_json::from_value(serde_json::json!({
            "nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "fail"}, {"id": "c", "type": "noop"}],
            "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}],
        }))
        .unwrap()
    }

    fn ids(s: BTreeSet<String>) -> Vec<String> {
        s.into_iter().collect()
    }

    #[test]
    fn the_preview_follows_the_engines_rule() {
        let r = run(&[("a", "succeeded"), ("b", "failed"), ("c", "skipped")]);
        assert_eq!(ids(will_run_again(&def(), &r, "failed")), ["b", "c"]);
        assert_eq!(ids(will_run_again(&def(), &r, "start")), ["a", "b", "c"]);
        assert_eq!(ids(will_run_again(&def(), &r, "a")), ["a", "b", "c"]);
    }

    #[test]
    fn a_node_the_history_never_named_counts_as_pending() {
        let r = run(&[("a", "succeeded"), ("b", "succeeded")]);
        assert_eq!(ids(will_run_again(&def(), &r, "failed")), ["c"]);
    }
}
