//! The live stream's entries gathered between two frames: a finished run's catch-up arrives as
//! thousands of entries in a few milliseconds, and folding them one render at a time took
//! seconds. Entries are queued here and applied together once per animation frame.

use trellis_model::trace::HistoryEvent;

#[derive(Debug, Default)]
pub struct Batch {
    pending: Vec<HistoryEvent>,
    scheduled: bool,
}

impl Batch {
    /// Queues an entry; true when no flush is scheduled yet (the caller schedules one).
    pub fn push(&mut self, entry: HistoryEvent) -> bool {
        self.pending.push(entry);
        !std::mem::replace(&mut self.scheduled, true)
    }

    /// The queued entries, in arrival order; the next push schedules a new flush.
    pub fn take(&mut self) -> Vec<HistoryEvent> {
        self.scheduled = false;
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: i64) -> HistoryEvent {
        serde_json::from_value(serde_json::json!({"seq": seq, "instance_id": "i", "at": "2026-01-01T00:00:00Z",
            "event": "instance", "status": "running", "previous": null}))
        .unwrap()
    }

    #[test]
    fn one_flush_is_scheduled_per_batch() {
        let mut b = Batch::default();
        assert!(b.push(entry(1)));
        assert!(!b.push(entry(2)));
        assert!(!b.push(entry(3)));
        assert_eq!(b.take().iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(b.take().is_empty());
        assert!(b.push(entry(4)), "after a flush the next entry schedules another");
    }
}
