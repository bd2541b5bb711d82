//! Lineage: where an instance stands in the chain of instances started by one another. Two
//! links start an instance from another — a sub-workflow call (a `subworkflow` node, a map's
//! item) and a failure handler — and each has its own bound. Each link adds one to its own
//! count and carries the other, so a chain that mixes them (A's handler H calls A, which fails
//! and starts H again) meets one of the bounds instead of looping: neither count ever resets.

use crate::store::{InstanceRow, InstanceStore};
use trellis_model::config::MAX_SUBWORKFLOW_DEPTH;
use trellis_model::definition::MAX_FAILURE_HANDLER_DEPTH;
use uuid::Uuid;

/// The links above an instance, by kind (stored as `instances.depth` and `failure_depth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lineage {
    /// Sub-workflow calls.
    pub depth: i32,
    /// Failure handlers.
    pub failure_depth: i32,
}

impl Lineage {
    pub fn of(instance: &InstanceRow) -> Lineage {
        Lineage { depth: instance.depth, failure_depth: instance.failure_depth }
    }

    /// The lineage of a child `self`'s instance starts, if within the bound.
    pub fn child(self) -> Option<Lineage> {
        (self.depth < MAX_SUBWORKFLOW_DEPTH).then_some(Lineage { depth: self.depth + 1, ..self })
    }

    /// The lineage of the failure handler `self`'s instance starts, if within the bound.
    pub fn handler(self) -> Option<Lineage> {
        (self.failure_depth < MAX_FAILURE_HANDLER_DEPTH)
            .then_some(Lineage { failure_depth: self.failure_depth + 1, ..self })
    }
}

/// The top of the chain of instances that started `instance`, through both links (itself
/// when nothing started it).
pub(super) async fn root(store: &dyn InstanceStore, instance: &InstanceRow) -> Uuid {
    let starter = |row: &InstanceRow| row.parent_instance_id.or(row.handles_failure_of);
    let (mut root, mut above) = (instance.id, starter(instance));
    // Bounded: a chain is at most both limits long.
    for _ in 0..=(MAX_SUBWORKFLOW_DEPTH + MAX_FAILURE_HANDLER_DEPTH) {
        let Some(id) = above else { break };
        root = id;
        above = match store.get_instance(id).await {
            Ok(Some(s)) => starter(&s.instance),
            _ => None,
        };
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_link_counts_its_own_kind_and_carries_the_other_up_to_its_bound() {
        let top = Lineage::default();
        let child = top.child().unwrap();
        let handler = child.handler().unwrap();
        assert_eq!(handler, Lineage { depth: 1, failure_depth: 1 });
        assert_eq!(handler.child().unwrap(), Lineage { depth: 2, failure_depth: 1 }, "a child keeps the handler chain");
        let deep = Lineage { depth: MAX_SUBWORKFLOW_DEPTH, failure_depth: MAX_FAILURE_HANDLER_DEPTH };
        assert_eq!((deep.child(), deep.handler()), (None, None));
        // A handler calling the failing workflow again (A → H → A → H ...) ends within both bounds.
        let mut at = top;
        let mut links = 0;
        while let Some(next) = at.handler().and_then(Lineage::child) {
            at = next;
            links += 2;
        }
        assert_eq!(links, 2 * MAX_FAILURE_HANDLER_DEPTH);
    }
}
