//! Which nodes a retry runs again, as one pure rule the engine and the browser's preview share:
//! the roots (failed, timed-out, canceled or pending nodes; or every node; or a picked node plus
//! the unfinished ones) and everything downstream of them.

use crate::definition::Definition;
use crate::status::NodeStatus;
use std::collections::{BTreeSet, HashMap};

/// Where a retry starts, over node indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryRoots {
    Start,
    Failed,
    Node(usize),
}

/// Whether a node in a finished instance is one a retry runs again by itself. Pending in a
/// finished instance: a node new in the version the retry moves it to (or never reached).
pub fn unfinished(status: NodeStatus) -> bool {
    matches!(status, NodeStatus::Failed | NodeStatus::TimedOut | NodeStatus::Canceled | NodeStatus::Pending)
}

/// The indexes (ascending) of the nodes a retry from `from` runs again: its roots and every node
/// reachable from them over `edges` (`(from, to)` indexes into `statuses`).
pub fn retry_set(statuses: &[NodeStatus], edges: &[(usize, usize)], from: RetryRoots) -> Vec<usize> {
    let mut marked: Vec<bool> = (0..statuses.len())
        .map(|i| match from {
            RetryRoots::Start => true,
            RetryRoots::Failed => unfinished(statuses[i]),
            RetryRoots::Node(x) => x == i || unfinished(statuses[i]),
        })
        .collect();
    let mut stack: Vec<usize> = (0..marked.len()).filter(|&i| marked[i]).collect();
    while let Some(n) = stack.pop() {
        for &(_, to) in edges.iter().filter(|(f, _)| *f == n) {
            if to < marked.len() && !marked[to] {
                marked[to] = true;
                stack.push(to);
            }
        }
    }
    (0..marked.len()).filter(|&i| marked[i]).collect()
}

/// [`retry_set`] over a definition: `from` is `failed`, `start` or a node id (as
/// `POST /instances/{id}/retry` takes it); a node without a status counts as pending.
pub fn retry_nodes(definition: &Definition, statuses: &HashMap<String, NodeStatus>, from: &str) -> BTreeSet<String> {
    let index: HashMap<&str, usize> = definition.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let roots = match from {
        "start" => RetryRoots::Start,
        "failed" => RetryRoots::Failed,
        node => match index.get(node) {
            Some(&i) => RetryRoots::Node(i),
            None => return BTreeSet::new(),
        },
    };
    let status: Vec<NodeStatus> =
        definition.nodes.iter().map(|n| statuses.get(&n.id).copied().unwrap_or(NodeStatus::Pending)).collect();
    let edges: Vec<(usize, usize)> = definition
        .edges
        .iter()
        .filter_map(|e| Some((*index.get(e.from.as_str())?, *index.get(e.to.as_str())?)))
        .collect();
    retry_set(&status, &edges, roots).into_iter().map(|i| definition.nodes[i].id.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use NodeStatus as S;

    fn chain() -> Definition {
        serde_json::from_value(serde_json::json!({
            "nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "noop"}, {"id": "c", "type": "noop"}, {"id": "side", "type": "noop"}],
            "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "a", "to": "side"}],
        }))
        .unwrap()
    }

    fn statuses(pairs: &[(&str, NodeStatus)]) -> HashMap<String, NodeStatus> {
        pairs.iter().map(|(id, s)| (id.to_string(), *s)).collect()
    }

    fn ids(set: BTreeSet<String>) -> Vec<String> {
        set.into_iter().collect()
    }

    #[test]
    fn from_failed_runs_the_failed_node_and_what_follows() {
        let s = statuses(&[("a", S::Succeeded), ("b", S::Failed), ("c", S::Skipped), ("side", S::Succeeded)]);
        assert_eq!(ids(retry_nodes(&chain(), &s, "failed")), ["b", "c"]);
    }

    #[test]
    fn from_start_runs_everything() {
        let s = statuses(&[("a", S::Succeeded), ("b", S::Failed)]);
        assert_eq!(ids(retry_nodes(&chain(), &s, "start")), ["a", "b", "c", "side"]);
    }

    #[test]
    fn from_a_node_adds_the_unfinished_ones() {
        let s = statuses(&[("a", S::Succeeded), ("b", S::Succeeded), ("c", S::Canceled), ("side", S::Succeeded)]);
        assert_eq!(ids(retry_nodes(&chain(), &s, "side")), ["c", "side"]);
        assert_eq!(ids(retry_nodes(&chain(), &s, "a")), ["a", "b", "c", "side"]);
        assert!(retry_nodes(&chain(), &s, "nope").is_empty());
    }

    #[test]
    fn nothing_unfinished_nothing_to_run() {
        let all = statuses(&[("a", S::Succeeded), ("b", S::Succeeded), ("c", S::Succeeded), ("side", S::Skipped)]);
        assert!(retry_nodes(&chain(), &all, "failed").is_empty());
        // A node with no status (new in a later version) counts as pending.
        let missing = statuses(&[("a", S::Succeeded), ("b", S::Succeeded), ("side", S::Succeeded)]);
        assert_eq!(ids(retry_nodes(&chain(), &missing, "failed")), ["c"]);
    }

    #[test]
    fn index_form_follows_edges_in_any_order() {
        // Edges listed against index order still reach everything downstream.
        let s = [S::Succeeded, S::Failed, S::Succeeded];
        assert_eq!(retry_set(&s, &[(2, 0), (1, 2)], RetryRoots::Failed), [0, 1, 2]);
    }
}
