//! Instances as this process last wrote them, so that their next transition need not lock and
//! read them first. The snapshot is what the batch that wrote it decided on, brought up to date
//! with its own writes (`batch::absorb`), with the `rev` it wrote and its history's last `seq`.
//!
//! Nothing here is trusted: a transition decided on a remembered snapshot is written only if
//! every instance's `rev` is still the remembered one and every fence still holds, checked in
//! the write itself (`queries/remembered.rs`). Every other writer of an instance's row,
//! nodes or history (another process, a retry, an admission, a map's items) sets `rev` one
//! higher, so a stale snapshot costs one refused write, then the locked path, never a wrong one.

mod heap;

use super::{NodeRow, Snapshot};
use heap::Meter;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// Instances remembered at most, and the memory they take (`heap.rs`: structs, values and
/// text as the allocator holds them); above either the oldest remembered are forgotten (they
/// are read again on their next transition). Enough for a burst of 10,000 timers of small
/// instances (about 1.5 KiB each).
const REMEMBERED: usize = 20_000;
const BUDGET: usize = 24 << 20;
/// An instance larger than this is not remembered. Copying a snapshot is copying pointers to
/// its shared rows, so the bound is about memory: the widest
/// definition (1,000 nodes) with outputs of a few hundred bytes each (an `http` node's status
/// and headers) fits, and six of them fill the budget. (At 256 KiB a static fan-out of 998
/// calls read its whole instance back for every transition and every attempt.)
const LARGEST: usize = 4 << 20;

/// An instance as it was written: its snapshot (the row's `rev` included) and the `seq` of its
/// last history entry.
#[derive(Debug, Clone)]
pub struct Remembered {
    pub snapshot: Snapshot,
    pub last_seq: i64,
}

#[derive(Default)]
pub struct Snapshots {
    entries: Mutex<Entries>,
}

/// A remembered instance read for an attempt: its snapshot (sharing the remembered rows) and
/// the JSON bytes of all its nodes' stored outputs, counted when they were written.
#[derive(Debug, Clone)]
pub struct Recalled {
    pub snapshot: Snapshot,
    pub outputs_bytes: usize,
}

/// One remembered instance: when it was remembered, the bytes it takes, and each row's sizes
/// (by position). A row the next snapshot of the instance still shares keeps its sizes, so
/// remembering a transition measures the rows it wrote, not the instance.
pub(super) struct Entry {
    at: u64,
    bytes: usize,
    remembered: Remembered,
    rows: Vec<RowSizes>,
    /// The sum of the rows' output JSON lengths.
    outputs_bytes: usize,
}

#[derive(Debug, Clone, Copy)]
struct RowSizes {
    /// What the row takes on the heap (`heap.rs`).
    heap: usize,
    /// Its output's JSON length.
    output: usize,
}

#[derive(Default)]
struct Entries {
    /// Each instance's entry.
    by_instance: HashMap<Uuid, Entry>,
    /// The remembered instances by when they were written, oldest first.
    by_age: BTreeMap<u64, Uuid>,
    /// Bumped at every `remember`.
    clock: u64,
    /// The sum of the remembered sizes.
    bytes: usize,
}

impl Entries {
    fn remove(&mut self, instance: &Uuid) -> Option<Entry> {
        let entry = self.by_instance.remove(instance)?;
        self.by_age.remove(&entry.at);
        self.bytes -= entry.bytes;
        Some(entry)
    }
}

impl Snapshots {
    /// The remembered snapshots of all of `ids`, and their history's last `seq`s; none if one
    /// of them is not remembered.
    pub fn recall(&self, ids: &[Uuid]) -> Option<(HashMap<Uuid, Snapshot>, HashMap<Uuid, i64>)> {
        let entries = self.entries.lock().expect("snapshots");
        let mut snapshots = HashMap::with_capacity(ids.len());
        let mut last_seqs = HashMap::with_capacity(ids.len());
        for id in ids {
            let remembered = &entries.by_instance.get(id)?.remembered;
            snapshots.insert(*id, remembered.snapshot.clone());
            last_seqs.insert(*id, remembered.last_seq);
        }
        Some((snapshots, last_seqs))
    }

    /// The remembered snapshot of `id`, if any, with its outputs' JSON bytes.
    pub fn get(&self, id: Uuid) -> Option<Recalled> {
        let entries = self.entries.lock().expect("snapshots");
        let entry = entries.by_instance.get(&id)?;
        Some(Recalled { snapshot: entry.remembered.snapshot.clone(), outputs_bytes: entry.outputs_bytes })
    }

    /// Remembers `instance` as just written; a finished instance is forgotten instead: nothing
    /// transitions it again but a retry, which reads it afresh under its lock.
    pub fn remember(&self, instance: Uuid, remembered: Remembered) {
        self.remember_within(instance, remembered, BUDGET);
    }

    /// `remember`, within `budget` bytes.
    fn remember_within(&self, instance: Uuid, remembered: Remembered, budget: usize) {
        let mut entries = self.entries.lock().expect("snapshots");
        let previous = entries.remove(&instance);
        if remembered.snapshot.instance.status.is_terminal() {
            return;
        }
        let Some(rows) = row_sizes(&remembered.snapshot.nodes, previous.as_ref()) else { return };
        let Some(bytes) = size_of(&remembered, &rows) else { return };
        while entries.by_instance.len() >= REMEMBERED || entries.bytes + bytes > budget {
            let Some((_, oldest)) = entries.by_age.pop_first() else { break };
            if let Some(gone) = entries.by_instance.remove(&oldest) {
                entries.bytes -= gone.bytes;
            }
        }
        entries.clock += 1;
        let at = entries.clock;
        entries.by_age.insert(at, instance);
        entries.bytes += bytes;
        let outputs_bytes = rows.iter().map(|r| r.output).sum();
        entries.by_instance.insert(instance, Entry { at, bytes, remembered, rows, outputs_bytes });
    }

    /// How many instances are remembered, and the bytes they take (`heap.rs`), for `/metrics`.
    pub fn held(&self) -> (usize, usize) {
        let entries = self.entries.lock().expect("snapshots");
        (entries.by_instance.len(), entries.bytes)
    }

    pub fn forget(&self, ids: &[Uuid]) {
        let mut entries = self.entries.lock().expect("snapshots");
        for id in ids {
            entries.remove(id);
        }
    }
}

/// Each row's sizes: kept from `previous` for a row still shared with it, measured for the
/// rest; `None` if a row alone is over `LARGEST`.
fn row_sizes(nodes: &[Arc<NodeRow>], previous: Option<&Entry>) -> Option<Vec<RowSizes>> {
    let before = previous.map(|p| (p.remembered.snapshot.nodes.as_slice(), p.rows.as_slice()));
    let kept = |i: usize, row: &Arc<NodeRow>| {
        let (rows, sizes) = before?;
        rows.get(i).filter(|old| Arc::ptr_eq(old, row)).and_then(|_| sizes.get(i).copied())
    };
    nodes
        .iter()
        .enumerate()
        .map(|(i, row)| match kept(i, row) {
            Some(sizes) => Some(sizes),
            None => Some(RowSizes { heap: heap::row(row, LARGEST)?, output: row.output_bytes() }),
        })
        .collect()
}

/// The bytes remembering `remembered` takes (`heap.rs`), or `None` if over `LARGEST`.
fn size_of(remembered: &Remembered, rows: &[RowSizes]) -> Option<usize> {
    let mut meter = Meter::new(LARGEST);
    meter.take(heap::ENTRY)?;
    meter.instance(&remembered.snapshot.instance)?;
    meter.nodes(&remembered.snapshot.nodes)?;
    meter.take(heap::block(std::mem::size_of_val(rows)))?;
    rows.iter().try_for_each(|r| meter.take(r.heap))?;
    Some(meter.used(LARGEST))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{InstanceRow, NodeRow};
    use trellis_model::{InstanceStatus, NodeStatus};

    fn remembered(instance: &InstanceRow, status: InstanceStatus) -> Remembered {
        let instance = InstanceRow {
            status,
            input: sqlx::types::Json(serde_json::json!({"pad": "x".repeat(200)})),
            ..instance.clone()
        };
        let nodes = vec![
            Arc::new(NodeRow::fresh("a".into(), 0, NodeStatus::Succeeded)),
            Arc::new(NodeRow::fresh("b".into(), 1, NodeStatus::Pending)),
        ];
        Remembered { snapshot: Snapshot { instance, nodes }, last_seq: 3 }
    }

    /// What remembering `remembered` afresh takes.
    fn measured(remembered: &Remembered) -> Option<usize> {
        size_of(remembered, &row_sizes(&remembered.snapshot.nodes, None)?)
    }

    #[test]
    fn a_write_measures_the_rows_it_replaced_and_keeps_the_outputs_count() {
        let snapshots = Snapshots::default();
        let row = InstanceRow::for_test(InstanceStatus::Running);
        let first = remembered(&row, InstanceStatus::Running);
        snapshots.remember(row.id, first.clone());
        assert_eq!(snapshots.get(row.id).expect("held").outputs_bytes, 0);
        // The next write shares `a` and replaces `b` with a row holding an output.
        let mut next = first.clone();
        let output = serde_json::json!({"status": 200, "body": "x".repeat(100)});
        next.snapshot.nodes[1] =
            Arc::new(NodeRow { output: Some(output.clone()), ..(*next.snapshot.nodes[1]).clone() });
        snapshots.remember(row.id, next.clone());
        let recalled = snapshots.get(row.id).expect("held");
        assert_eq!(recalled.outputs_bytes, serde_json::to_string(&output).unwrap().len());
        assert!(Arc::ptr_eq(&recalled.snapshot.nodes[0], &first.snapshot.nodes[0]), "rows are shared, not copied");
        assert_eq!(snapshots.held().1, measured(&next).unwrap(), "kept sizes add up as a fresh measure does");
    }

    #[test]
    fn an_instance_is_held_until_a_write_ends_it() {
        let snapshots = Snapshots::default();
        let row = InstanceRow::for_test(InstanceStatus::Running);
        snapshots.remember(row.id, remembered(&row, InstanceStatus::Running));
        let (count, bytes) = snapshots.held();
        assert_eq!(count, 1);
        // The row, two nodes, the input's map leaf and text, and the entry in both maps.
        assert!(bytes > 2_000 && bytes < 4_000, "{bytes}");
        assert!(snapshots.get(row.id).is_some());
        snapshots.remember(row.id, remembered(&row, InstanceStatus::Failed));
        assert_eq!(snapshots.held(), (0, 0), "nothing transitions an ended instance again");
        assert!(snapshots.get(row.id).is_none());
    }

    #[test]
    fn the_widest_definition_with_calls_outputs_is_remembered() {
        let row = InstanceRow::for_test(InstanceStatus::Running);
        let mut wide = remembered(&row, InstanceStatus::Running);
        let output = serde_json::json!({"status": 200, "body": {}, "headers": {
            "content-type": "application/json", "content-length": "2", "date": "Sun, 29 Nov 2026 19:00:00 GMT"}});
        wide.snapshot.nodes = (0..1_000)
            .map(|i| {
                Arc::new(NodeRow {
                    output: Some(output.clone()),
                    ..NodeRow::fresh(format!("call{i}"), i, NodeStatus::Succeeded)
                })
            })
            .collect();
        let size = measured(&wide).expect("a fan-out of 1,000 calls is remembered");
        assert!(size < BUDGET / 4, "{size}");
    }

    #[test]
    fn over_the_budget_the_oldest_are_forgotten() {
        let snapshots = Snapshots::default();
        let rows: Vec<InstanceRow> = (0..3).map(|_| InstanceRow::for_test(InstanceStatus::Running)).collect();
        let one = measured(&remembered(&rows[0], InstanceStatus::Running)).expect("small");
        for row in &rows {
            snapshots.remember_within(row.id, remembered(row, InstanceStatus::Running), 2 * one);
        }
        assert_eq!(snapshots.held(), (2, 2 * one));
        assert!(snapshots.get(rows[0].id).is_none(), "the oldest went first");
        assert!(snapshots.get(rows[2].id).is_some());
    }
}
