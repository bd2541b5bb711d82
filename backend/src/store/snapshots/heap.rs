//! What a remembered snapshot occupies in this process: its structs, and every block they own
//! on the heap as the allocator hands it out. The budget of `snapshots.rs` is counted in these
//! bytes, not in the JSON's length: a one-field object of serde_json is a whole B-tree leaf
//! (eleven keys and values, about 640 bytes), a 3-byte string a 32-byte block.

use super::Entry;
use crate::store::{InstanceRow, NodeRow};
use serde_json::Value;
use std::mem::size_of;
use std::sync::Arc;
use uuid::Uuid;

/// Entries a node of std's B-tree holds at most.
const NODE_ENTRIES: usize = 11;
/// A leaf of serde_json's map (a `BTreeMap<String, Value>`): its keys and values, the parent
/// pointer, the index in the parent and the length.
const MAP_LEAF: usize = NODE_ENTRIES * (size_of::<String>() + size_of::<Value>()) + 16;
/// An internal node is a leaf with its children's pointers.
const MAP_INTERNAL: usize = MAP_LEAF + (NODE_ENTRIES + 1) * size_of::<usize>();
/// Entries per node on average: a node splits in two when full, so nodes are between half
/// and entirely full.
const ENTRIES_PER_NODE: usize = 8;

/// What remembering one instance costs besides its snapshot: its slot in the map by instance
/// (at the table's load factor, 7/8, with a control byte) and its entry in the map by age.
pub const ENTRY: usize = (size_of::<(Uuid, Entry)>() + 1) * 8 / 7 + size_of::<(u64, Uuid)>() * 2;

/// The bytes the allocator takes for a request of `n`: with its 8-byte header, rounded up to
/// 16, at least 32 (glibc's malloc; others round alike); nothing for nothing.
pub fn block(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n + 8).max(32).next_multiple_of(16)
    }
}

/// Counts bytes down from a limit, giving up as soon as they would pass it.
pub struct Meter {
    left: usize,
}

impl Meter {
    pub fn new(limit: usize) -> Meter {
        Meter { left: limit }
    }

    /// What was counted so far, given the limit it started with.
    pub fn used(&self, limit: usize) -> usize {
        limit - self.left
    }

    /// Counts `bytes`; `None` once over the limit.
    pub fn take(&mut self, bytes: usize) -> Option<()> {
        self.left = self.left.checked_sub(bytes)?;
        Some(())
    }

    fn text(&mut self, text: Option<&String>) -> Option<()> {
        self.take(text.map_or(0, |t| block(t.capacity())))
    }

    /// The heap blocks `value` owns (not the `Value` itself, which its owner holds inline).
    pub fn value(&mut self, value: &Value) -> Option<()> {
        match value {
            Value::String(s) => self.take(block(s.capacity())),
            Value::Array(items) => {
                self.take(block(items.capacity() * size_of::<Value>()))?;
                items.iter().try_for_each(|item| self.value(item))
            }
            Value::Object(fields) => {
                self.take(map_nodes(fields.len()))?;
                fields.iter().try_for_each(|(key, item)| {
                    self.take(block(key.capacity()))?;
                    self.value(item)
                })
            }
            _ => Some(()),
        }
    }

    /// The row's struct and what it owns.
    pub fn instance(&mut self, row: &InstanceRow) -> Option<()> {
        self.take(size_of::<InstanceRow>())?;
        for text in [&row.error, &row.business_key, &row.concurrency_key, &row.trace_id, &row.parent_span_id] {
            self.text(text.as_ref())?;
        }
        self.text(row.parent_node_id.as_ref())?;
        self.value(&row.input.0)?;
        row.output.as_ref().map_or(Some(()), |output| self.value(&output.0))
    }

    /// The nodes' vector of pointers (each row is counted on its own: [`row`]).
    pub fn nodes(&mut self, nodes: &Vec<Arc<NodeRow>>) -> Option<()> {
        self.take(block(nodes.capacity() * size_of::<Arc<NodeRow>>()))
    }
}

/// One shared node row's block (its struct beside the two counts) and what the row owns, or
/// `None` if over `limit`.
pub fn row(node: &NodeRow, limit: usize) -> Option<usize> {
    let mut meter = Meter::new(limit);
    meter.take(block(2 * size_of::<usize>() + size_of::<NodeRow>()))?;
    meter.take(block(node.node_id.capacity()))?;
    meter.text(node.outcome.as_ref())?;
    meter.text(node.error.as_ref())?;
    node.output.as_ref().map_or(Some(()), |output| meter.value(output))?;
    Some(meter.used(limit))
}

/// The blocks of a serde_json map of `entries` entries: its leaves, and above them internal
/// nodes, a level at a time.
fn map_nodes(entries: usize) -> usize {
    if entries == 0 {
        return 0;
    }
    let mut level = entries.div_ceil(ENTRIES_PER_NODE);
    let mut bytes = level * block(MAP_LEAF);
    while level > 1 {
        level = level.div_ceil(ENTRIES_PER_NODE + 1);
        bytes += level * block(MAP_INTERNAL);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn heap_of(value: &Value) -> usize {
        let mut meter = Meter::new(usize::MAX);
        meter.value(value).expect("no limit");
        meter.used(usize::MAX)
    }

    #[test]
    fn blocks_are_what_malloc_hands_out() {
        assert_eq!(block(0), 0);
        assert_eq!(block(1), 32);
        assert_eq!(block(24), 32);
        assert_eq!(block(25), 48);
        assert_eq!(block(200), 208);
    }

    #[test]
    fn an_object_costs_a_tree_node_not_its_text() {
        // `{"a":1}` is 7 bytes of JSON, but a whole leaf of the map and a block for the key.
        let one = heap_of(&json!({"a": 1}));
        assert_eq!(one, block(MAP_LEAF) + block(1));
        assert!(one > 600, "{one}");
        // A 200-byte input: the leaf, the keys, the padding's block.
        let input = heap_of(&json!({"n": 1, "pad": "x".repeat(180)}));
        assert_eq!(input, block(MAP_LEAF) + block(1) + block(3) + block(180));
        // Many fields: about one leaf per eight, and the nodes above them.
        let wide: serde_json::Map<String, Value> = (0..100).map(|i| (format!("k{i:03}"), json!(i))).collect();
        let wide = heap_of(&Value::Object(wide));
        assert!(wide >= 13 * block(MAP_LEAF) + 100 * 32, "{wide}");
    }

    #[test]
    fn arrays_count_their_slots_and_items() {
        let items = json!(["abc", null, [1, 2]]);
        let expected = block(3 * size_of::<Value>()) + block(3) + block(2 * size_of::<Value>());
        assert_eq!(heap_of(&items), expected);
    }

    #[test]
    fn a_meter_stops_once_over_its_limit() {
        let mut meter = Meter::new(1_000);
        assert!(meter.value(&json!({"big": "x".repeat(2_000)})).is_none());
        let mut meter = Meter::new(10_000);
        assert!(meter.value(&json!({"small": "x"})).is_some());
    }

    #[test]
    fn an_entry_counts_both_maps() {
        assert!(ENTRY > size_of::<super::super::Remembered>(), "{ENTRY}");
    }
}
