//! Instances as this process last wrote them, so that their next transition need not lock and
//! read them first. The snapshot is what the batch that wrote it decided on, brought up to date
//! with its own writes (`batch::absorb`), with the `rev` it wrote and its history's last `seq`.
//!
//! Nothing here is trusted: a transition decided on a remembered snapshot is written only if
//! every instance's `rev` is still the remembered one and every fence still holds, checked in
//! the write itself (`shared/remembered.rs`). Every other writer of an instance's row,
//! nodes or history (another process, a retry, an admission, a map's items) sets `rev` one
//! higher, so a stale snapshot costs one refused write, then the locked path, never a wrong one.

use super::engine_records::Snapshot;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use uuid::Uuid;

/// Instances remembered at most, and their bytes (estimated: JSON and text); above either the
/// oldest remembered are forgotten (they are read again on their next transition). Enough for
/// a burst of 10,000 timers of small instances.
const REMEMBERED: usize = 20_000;
const BUDGET: usize = 64 << 20;
/// An instance larger than this is not remembered: cloning it for a transition would cost
/// about what reading it does.
const LARGEST: usize = 256 << 10;

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

#[derive(Default)]
struct Entries {
    /// Each instance's snapshot, when it was remembered and its estimated size.
    by_instance: HashMap<Uuid, (u64, usize, Remembered)>,
    /// The remembered instances by when they were written, oldest first.
    by_age: BTreeMap<u64, Uuid>,
    /// Bumped at every `remember`.
    clock: u64,
    /// The sum of the remembered sizes.
    bytes: usize,
}

impl Entries {
    fn remove(&mut self, instance: &Uuid) {
        if let Some((at, size, _)) = self.by_instance.remove(instance) {
            self.by_age.remove(&at);
            self.bytes -= size;
        }
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
            let (_, _, remembered) = entries.by_instance.get(id)?;
            snapshots.insert(*id, remembered.snapshot.clone());
            last_seqs.insert(*id, remembered.last_seq);
        }
        Some((snapshots, last_seqs))
    }

    /// The remembered snapshot of `id`, if any.
    pub fn get(&self, id: Uuid) -> Option<Snapshot> {
        let entries = self.entries.lock().expect("snapshots");
        entries.by_instance.get(&id).map(|(_, _, remembered)| remembered.snapshot.clone())
    }

    /// Remembers `instance` as just written; a finished instance is forgotten instead (its next
    /// write, a retry, is rare and locks anyway).
    pub fn remember(&self, instance: Uuid, remembered: Remembered) {
        let mut entries = self.entries.lock().expect("snapshots");
        entries.remove(&instance);
        if remembered.snapshot.instance.status.is_terminal() {
            return;
        }
        let Some(size) = size_of(&remembered.snapshot) else { return };
        while entries.by_instance.len() >= REMEMBERED || entries.bytes + size > BUDGET {
            let Some((_, oldest)) = entries.by_age.pop_first() else { break };
            if let Some((_, size, _)) = entries.by_instance.remove(&oldest) {
                entries.bytes -= size;
            }
        }
        entries.clock += 1;
        let at = entries.clock;
        entries.by_age.insert(at, instance);
        entries.bytes += size;
        entries.by_instance.insert(instance, (at, size, remembered));
    }

    pub fn forget(&self, ids: &[Uuid]) {
        let mut entries = self.entries.lock().expect("snapshots");
        for id in ids {
            entries.remove(id);
        }
    }
}

/// About the bytes `snapshot` holds, or `None` if over `LARGEST`.
fn size_of(snapshot: &Snapshot) -> Option<usize> {
    let mut left = LARGEST;
    let row = &snapshot.instance;
    let texts = [&row.error, &row.business_key, &row.concurrency_key, &row.trace_id, &row.parent_span_id];
    take(&mut left, 512 + texts.iter().map(|t| t.as_ref().map_or(0, String::len)).sum::<usize>())?;
    json_size(&row.input.0, &mut left)?;
    if let Some(output) = &row.output {
        json_size(&output.0, &mut left)?;
    }
    for node in &snapshot.nodes {
        take(&mut left, 256 + node.node_id.len() + node.error.as_ref().map_or(0, String::len))?;
        if let Some(output) = &node.output {
            json_size(output, &mut left)?;
        }
    }
    Some(LARGEST - left)
}

/// Takes `bytes` from what is `left`; `None` once it would go below nothing.
fn take(left: &mut usize, bytes: usize) -> Option<()> {
    *left = left.checked_sub(bytes)?;
    Some(())
}

/// Takes about the bytes `value` holds from `left`, stopping as soon as it runs out.
fn json_size(value: &Value, left: &mut usize) -> Option<()> {
    match value {
        Value::String(s) => take(left, 24 + s.len()),
        Value::Array(items) => {
            take(left, 24)?;
            items.iter().try_for_each(|item| json_size(item, left))
        }
        Value::Object(fields) => {
            take(left, 24)?;
            fields.iter().try_for_each(|(key, item)| {
                take(left, 24 + key.len())?;
                json_size(item, left)
            })
        }
        _ => take(left, 16),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_size_counts_nested_text_and_stops_once_over() {
        let mut left = 1_000;
        assert!(json_size(&serde_json::json!({"a": ["xyz", 1, null]}), &mut left).is_some());
        assert!(left < 1_000 && left > 800, "{left}");
        let mut left = 100;
        assert!(json_size(&serde_json::json!({"big": "x".repeat(200)}), &mut left).is_none());
    }
}
