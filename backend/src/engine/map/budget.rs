//! The room a map's output has, spent as items end: the succeeded items' outputs (its
//! `results`) are held to the per-node cap, and with the instance's other outputs to the
//! per-instance cap (`outputs.rs`), item by item — so the first item that breaks a cap stops
//! the map, and what a map holds in memory and in `map_items` is bounded by the caps, not by
//! its number of items. The map's whole output is checked again when it ends, as every node's.

use super::super::outputs::{serialized_len, OutputCaps};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub(super) struct Budget {
    caps: OutputCaps,
    /// The map node's id.
    node: String,
    /// The serialized size of the instance's other nodes' outputs.
    others: usize,
    /// The serialized size of the results so far (each with its separating comma).
    used: AtomicUsize,
    /// Why the map stopped, once an item broke a cap.
    refused: Mutex<Option<String>>,
}

impl Budget {
    /// The budget of map `node` whose instance's other outputs take `others_bytes` as JSON
    /// (the count the map's own output is checked beside at its end), with the outputs an
    /// earlier attempt's items succeeded with (`reused`) already spent.
    pub fn new<'a>(
        caps: OutputCaps,
        node: &str,
        others_bytes: usize,
        reused: impl IntoIterator<Item = &'a Value>,
    ) -> Budget {
        let reused = reused.into_iter().map(|v| serialized_len(v) + 1).sum::<usize>();
        Budget {
            caps,
            node: node.to_owned(),
            others: others_bytes,
            used: AtomicUsize::new(reused),
            refused: Mutex::new(None),
        }
    }

    /// Spends the room item `index`'s `output` takes; why it cannot be kept if it breaks a cap
    /// (the map stops then: see [`Budget::refusal`]).
    pub fn take(&self, index: usize, output: &Value) -> Result<(), String> {
        let size = serialized_len(output);
        let total = self.used.fetch_add(size + 1, Ordering::SeqCst) + size + 1;
        let (node, OutputCaps { node_bytes, instance_bytes }) = (&self.node, self.caps);
        let error = if total > node_bytes {
            format!(
                "item {index}'s output ({size} bytes) brings the results of map `{node}` to {total} bytes, over the \
                 cap of {node_bytes} bytes per node output (TRELLIS_MAX_NODE_OUTPUT_BYTES)"
            )
        } else if self.others + total > instance_bytes {
            format!(
                "item {index}'s output ({size} bytes) brings the instance's outputs to {} bytes, over the cap of \
                 {instance_bytes} bytes per instance (TRELLIS_MAX_INSTANCE_OUTPUT_BYTES)",
                self.others + total
            )
        } else {
            return Ok(());
        };
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        refused.get_or_insert_with(|| error.clone());
        Err(error)
    }

    /// Why the map stopped at an item over a cap, if it did.
    pub fn refusal(&self) -> Option<String> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_item_over_the_running_total_is_refused_naming_it_and_the_sizes() {
        let caps = OutputCaps { node_bytes: 30, instance_bytes: 1_000 };
        let budget = Budget::new(caps, "each", 0, [&json!("earlier")]);
        assert_eq!(budget.take(1, &json!("abcdefgh")), Ok(()), "(9 + 1) + (10 + 1) bytes");
        assert_eq!(budget.refusal(), None);
        let error = budget.take(2, &json!("abcdefghij")).unwrap_err();
        assert!(
            error.starts_with("item 2's output (12 bytes) brings the results of map `each` to 34 bytes"),
            "{error}"
        );
        assert!(error.contains("over the cap of 30 bytes per node output"), "{error}");
        assert_eq!(budget.refusal(), Some(error.clone()));
        budget.take(3, &json!(1)).unwrap_err();
        assert_eq!(budget.refusal(), Some(error), "the first refusal is the map's");
    }

    #[test]
    fn the_instances_other_outputs_count_against_the_instance_cap() {
        let caps = OutputCaps { node_bytes: 1_000, instance_bytes: 40 };
        let other = serialized_len(&json!("x".repeat(20)));
        let budget = Budget::new(caps, "each", other, []);
        assert_eq!(budget.take(0, &json!("abcdefgh")), Ok(()));
        let error = budget.take(1, &json!("abcdefgh")).unwrap_err();
        assert!(
            error.contains("brings the instance's outputs to 44 bytes, over the cap of 40 bytes per instance"),
            "{error}"
        );
    }
}
