//! A `map` node's items in the run view: its progress as a sentence, and the paging of the
//! per-item table (`GET /instances/{id}/nodes/{node}/items` pages forward only, by cursor, so
//! going back keeps the cursors of the pages already seen).

use crate::run::RunState;
use trellis_model::api::{InstanceDetail, MapItem};
use trellis_model::trace::ItemProgress;

/// The item statuses the table filters by (`""` for all).
pub const FILTERS: [&str; 7] = ["", "pending", "running", "succeeded", "failed", "timed_out", "canceled"];

/// "37 / 100 done, 2 failed" (the failures only when there are some).
pub fn progress_text(p: &ItemProgress) -> String {
    let done = format!("{} / {} done", p.done(), p.total);
    match p.failed {
        0 => done,
        n => format!("{done}, {n} failed"),
    }
}

/// A map node's progress: the history's latest when it told one, else the instance's (the
/// value when the page opened, before the stream has caught up).
pub fn progress(run: &RunState, detail: Option<&InstanceDetail>, node: &str) -> Option<ItemProgress> {
    let live = run.nodes.get(node).and_then(|n| n.items);
    live.or_else(|| detail?.nodes.iter().find(|n| n.id == node)?.items)
}

/// How long an item ran, or `None` while it has not ended.
pub fn duration_ms(item: &MapItem) -> Option<i64> {
    Some((item.ended_at? - item.started_at?).num_milliseconds())
}

/// An item's output or error in one table cell, cut to `max` characters.
pub fn outcome_text(item: &MapItem, max: usize) -> String {
    let full = match (&item.error, &item.output) {
        (Some(e), _) => e.clone(),
        (None, Some(o)) => o.to_string(),
        (None, None) => String::new(),
    };
    crate::format::cut(&full, max)
}

/// Where the table is: the cursor of each page seen before the current one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pager {
    /// `cursors[i]` reads page i; the last one reads the current page (`None`: the first).
    cursors: Vec<Option<u32>>,
}

impl Pager {
    /// The cursor the current page is read with.
    pub fn current(&self) -> Option<u32> {
        self.cursors.last().copied().flatten()
    }

    /// The 1-based number of the current page.
    pub fn page(&self) -> usize {
        self.cursors.len().max(1)
    }

    pub fn has_previous(&self) -> bool {
        self.cursors.len() > 1
    }

    /// Moves to the page `next` (the server's cursor after the current page); false (and no
    /// move) when there is none.
    pub fn forward(&mut self, next: Option<&str>) -> bool {
        let Some(next) = next.and_then(|c| c.parse::<u32>().ok()) else { return false };
        if self.cursors.is_empty() {
            self.cursors.push(None);
        }
        self.cursors.push(Some(next));
        true
    }

    /// Moves to the previous page; false on the first.
    pub fn back(&mut self) -> bool {
        if !self.has_previous() {
            return false;
        }
        self.cursors.pop();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(v: serde_json::Value) -> MapItem {
        let mut base = json!({"index": 0, "status": "succeeded", "attempts": 1, "started_at": null,
            "ended_at": null, "output": null, "error": null});
        base.as_object_mut().unwrap().extend(v.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn progress_reads_as_a_sentence() {
        let p = ItemProgress { total: 100, succeeded: 35, failed: 2, running: 5 };
        assert_eq!(progress_text(&p), "37 / 100 done, 2 failed");
        assert_eq!(progress_text(&ItemProgress { total: 30, succeeded: 30, ..Default::default() }), "30 / 30 done");
    }

    #[test]
    fn items_show_their_duration_and_outcome() {
        let ran = item(json!({"started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:01.5Z",
            "output": {"id": 7}}));
        assert_eq!(duration_ms(&ran), Some(1500));
        assert_eq!(outcome_text(&ran, 80), r#"{"id":7}"#);
        let failed =
            item(json!({"status": "failed", "started_at": "2026-01-01T00:00:00Z", "error": "boom ".repeat(5)}));
        assert_eq!(duration_ms(&failed), None);
        assert_eq!(outcome_text(&failed, 9), "boom boom…");
        assert_eq!(outcome_text(&item(json!({"status": "pending"})), 9), "");
    }

    #[test]
    fn the_pager_goes_forward_by_cursor_and_back_by_memory() {
        let mut p = Pager::default();
        assert_eq!((p.current(), p.page(), p.has_previous()), (None, 1, false));
        assert!(!p.forward(None), "the last page");
        assert!(p.forward(Some("99")));
        assert_eq!((p.current(), p.page(), p.has_previous()), (Some(99), 2, true));
        assert!(p.forward(Some("199")));
        assert_eq!(p.current(), Some(199));
        assert!(p.back());
        assert_eq!((p.current(), p.page()), (Some(99), 2));
        assert!(p.back());
        assert_eq!((p.current(), p.page(), p.has_previous()), (None, 1, false));
        assert!(!p.back());
    }
}
