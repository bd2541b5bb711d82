//! A cursor-paged list as a page holds it (workflows, instances, the audit log): pages appended
//! by "Load more", a first page reread on a new filter or a refresh, and answers that arrive
//! after a newer request started ignored (a slow first search must not overwrite a faster second
//! one). `X` is what an answer carries beside its rows (the instances' status counts).

use trellis_model::api::{AuditEntry, InstanceSummary, Page, WorkflowSummary};

/// A row's identity, so a row on two pages (created between loads) is shown once.
pub trait Keyed {
    fn key(&self) -> &str;
}

impl Keyed for WorkflowSummary {
    fn key(&self) -> &str {
        &self.id
    }
}

impl Keyed for InstanceSummary {
    fn key(&self) -> &str {
        &self.id
    }
}

impl Keyed for AuditEntry {
    fn key(&self) -> &str {
        &self.id
    }
}

/// What a reread first page does to the rows below it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Refresh {
    /// The first page replaces the list (a new search or filter).
    #[default]
    Replace,
    /// Rows already loaded beyond the first page stay (a live refresh must not shrink the list
    /// under the reader). Needs keys that sort newest first, as time-ordered ids do.
    KeepBelow,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PagedList<T, X = ()> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
    /// What the latest applied answer carried beside its rows.
    pub extra: Option<X>,
    pub loading: bool,
    refresh: Refresh,
    /// Bumped by every request; only the answer carrying the latest value is applied.
    latest: u64,
    loaded: bool,
    failed: bool,
}

impl<T: Keyed, X> Default for PagedList<T, X> {
    fn default() -> Self {
        Self::new(Refresh::default())
    }
}

/// Identifies one request, and whether its page continues the list or starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    id: u64,
    append: bool,
}

impl<T: Keyed, X> PagedList<T, X> {
    pub fn new(refresh: Refresh) -> Self {
        PagedList {
            items: Vec::new(),
            next_cursor: None,
            extra: None,
            loading: false,
            refresh,
            latest: 0,
            loaded: false,
            failed: false,
        }
    }

    /// Marks a request as started. Old rows stay on screen until its answer arrives, so the
    /// table does not flicker empty during a refresh.
    pub fn begin(&mut self, append: bool) -> Ticket {
        self.latest += 1;
        self.loading = true;
        Ticket { id: self.latest, append }
    }

    /// Applies an answer (`None`: the request failed, and was reported elsewhere). Returns false,
    /// changing nothing, when a newer request superseded it.
    pub fn finish(&mut self, ticket: Ticket, answer: Option<(Page<T>, X)>) -> bool {
        if ticket.id != self.latest {
            return false;
        }
        self.loading = false;
        self.failed = answer.is_none();
        let Some((page, extra)) = answer else { return true };
        self.extra = Some(extra);
        if ticket.append {
            let fresh: Vec<_> =
                page.items.into_iter().filter(|row| !self.items.iter().any(|seen| seen.key() == row.key())).collect();
            self.items.extend(fresh);
            self.next_cursor = page.next_cursor;
        } else {
            self.first_page(page);
        }
        self.loaded = true;
        true
    }

    fn first_page(&mut self, page: Page<T>) {
        let kept = match (self.refresh, page.next_cursor.is_some(), page.items.last()) {
            // More rows were loaded than the first page holds: keep those beyond it.
            (Refresh::KeepBelow, true, Some(last)) => {
                let last = last.key().to_owned();
                std::mem::take(&mut self.items).into_iter().filter(|row| row.key() < last.as_str()).collect()
            }
            _ => Vec::new(),
        };
        // The rows below were complete already when some are kept: their cursor still holds.
        if kept.is_empty() {
            self.next_cursor = page.next_cursor;
        }
        self.items = page.items;
        self.items.extend(kept);
    }

    /// The cursor for "Load more", unless there is no further page or a request is in flight.
    pub fn more_cursor(&self) -> Option<String> {
        if self.loading {
            None
        } else {
            self.next_cursor.clone()
        }
    }

    /// True once a load finished with nothing to show, so the page can say so instead of a blank table.
    pub fn is_empty(&self) -> bool {
        self.loaded && !self.loading && !self.failed && self.items.is_empty()
    }

    /// Changes the loaded row `key`, if it is loaded (a live status change).
    pub fn update_row(&mut self, key: &str, change: impl FnOnce(&mut T)) {
        if let Some(row) = self.items.iter_mut().find(|row| row.key() == key) {
            change(row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Row(String);

    impl Keyed for Row {
        fn key(&self) -> &str {
            &self.0
        }
    }

    fn page(ids: &[&str], next: Option<&str>) -> Option<(Page<Row>, ())> {
        Some((
            Page { items: ids.iter().map(|id| Row((*id).to_owned())).collect(), next_cursor: next.map(Into::into) },
            (),
        ))
    }

    fn ids(list: &PagedList<Row>) -> Vec<&str> {
        list.items.iter().map(|r| r.0.as_str()).collect()
    }

    #[test]
    fn load_more_appends_each_row_once_and_a_refresh_replaces() {
        let mut list = PagedList::default();
        let first = list.begin(false);
        assert!(list.finish(first, page(&["a", "b"], Some("c1"))));
        assert_eq!(list.more_cursor().as_deref(), Some("c1"));

        let more = list.begin(true);
        assert_eq!(list.more_cursor(), None, "no second Load more while one is in flight");
        list.finish(more, page(&["b", "c"], None));
        assert_eq!(ids(&list), ["a", "b", "c"]);
        assert_eq!(list.more_cursor(), None);

        let refresh = list.begin(false);
        assert_eq!(ids(&list), ["a", "b", "c"], "old rows stay until the new page arrives");
        list.finish(refresh, page(&["z"], None));
        assert_eq!(ids(&list), ["z"]);
    }

    #[test]
    fn a_superseded_answer_is_ignored() {
        let mut list = PagedList::default();
        let slow = list.begin(false);
        let fast = list.begin(false);
        assert!(list.finish(fast, page(&["new"], None)));
        assert!(!list.finish(slow, page(&["old"], None)));
        assert_eq!(ids(&list), ["new"]);
        assert!(!list.loading);
    }

    #[test]
    fn a_live_refresh_keeps_the_rows_below_the_first_page() {
        let mut list = PagedList::new(Refresh::KeepBelow);
        let t = list.begin(false);
        list.finish(t, page(&["9", "8"], Some("8")));
        let t = list.begin(true);
        list.finish(t, page(&["7", "6"], None));
        // A new row "a" arrives at the top; the first page now ends at "9".
        let t = list.begin(false);
        list.finish(t, page(&["a", "9"], Some("9")));
        assert_eq!(ids(&list), ["a", "9", "8", "7", "6"]);
        assert_eq!(list.next_cursor, None, "the rows further down were complete already");
    }

    #[test]
    fn empty_is_said_only_after_a_load_that_did_not_fail() {
        let mut list = PagedList::<Row>::default();
        assert!(!list.is_empty());
        let t = list.begin(false);
        list.finish(t, None);
        assert!(!list.is_empty() && !list.loading);
        let t = list.begin(false);
        list.finish(t, page(&[], None));
        assert!(list.is_empty());
    }

    #[test]
    fn a_loaded_row_can_change_in_place() {
        let mut list = PagedList::default();
        let t = list.begin(false);
        list.finish(t, page(&["1"], None));
        list.update_row("1", |r| r.0.push('!'));
        list.update_row("2", |_| unreachable!("not loaded"));
        assert_eq!(ids(&list), ["1!"]);
    }
}
