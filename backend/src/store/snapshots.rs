//! Instances as this process last wrote them, so that their next transition need not lock and
//! read them first. The snapshot is what the batch that wrote it decided on, brought up to date
//! with its own writes (`batch::absorb`), with the `rev` it wrote and its history's last `seq`.
//!
//! Nothing here is trusted: a transition decided on a remembered snapshot is written only if
//! every instance's `rev` is still the remembered one and every fence still holds, checked in
//! the write itself (`shared/transitions_cached.rs`). Every other writer of an instance's row,
//! nodes or history (another process, a retry, an admission, a map's items) sets `rev` one
//! higher, so a stale snapshot costs one refused write, then the locked path, never a wrong one.

use super::engine_records::Snapshot;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use uuid::Uuid;

/// Instances remembered at most. A running chain needs one each; above this the oldest
/// remembered are forgotten (they are read again on their next transition).
const REMEMBERED: usize = 4_096;

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
    by_instance: HashMap<Uuid, (u64, Remembered)>,
    /// The remembered instances by when they were written, oldest first.
    by_age: BTreeMap<u64, Uuid>,
    /// Bumped at every `remember`.
    clock: u64,
}

impl Entries {
    fn remove(&mut self, instance: &Uuid) {
        if let Some((at, _)) = self.by_instance.remove(instance) {
            self.by_age.remove(&at);
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
            let (_, remembered) = entries.by_instance.get(id)?;
            snapshots.insert(*id, remembered.snapshot.clone());
            last_seqs.insert(*id, remembered.last_seq);
        }
        Some((snapshots, last_seqs))
    }

    /// Remembers `instance` as just written; a finished instance is forgotten instead (its next
    /// write, a retry, is rare and locks anyway).
    pub fn remember(&self, instance: Uuid, remembered: Remembered) {
        let mut entries = self.entries.lock().expect("snapshots");
        entries.remove(&instance);
        if remembered.snapshot.instance.status.is_terminal() {
            return;
        }
        if entries.by_instance.len() >= REMEMBERED {
            if let Some((_, oldest)) = entries.by_age.pop_first() {
                entries.by_instance.remove(&oldest);
            }
        }
        entries.clock += 1;
        let at = entries.clock;
        entries.by_age.insert(at, instance);
        entries.by_instance.insert(instance, (at, remembered));
    }

    pub fn forget(&self, ids: &[Uuid]) {
        let mut entries = self.entries.lock().expect("snapshots");
        for id in ids {
            entries.remove(id);
        }
    }
}
