//! The instances list as the page holds it: pages appended by "Load more", the counts of the
//! filter, rows re-coloured by live status changes, and a reread first page merged in front of
//! the rows already loaded further down.

use crate::error::ApiError;
use trellis_model::api::{InstancePage, InstanceSummary, StatusCounts};
use trellis_model::InstanceStatus;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstanceList {
    pub items: Vec<InstanceSummary>,
    pub next_cursor: Option<String>,
    pub counts: Option<StatusCounts>,
    pub loading: bool,
    pub error: Option<String>,
    latest: u64,
    loaded: bool,
}

/// One request: which answer is current, and whether it continues the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    id: u64,
    append: bool,
}

impl InstanceList {
    pub fn begin(&mut self, append: bool) -> Ticket {
        self.latest += 1;
        self.loading = true;
        Ticket { id: self.latest, append }
    }

    /// Applies an answer unless a newer request superseded it. A first page replaces the rows it
    /// covers and keeps older rows already loaded by "Load more" (a live refresh must not shrink
    /// the list under the reader).
    pub fn finish(&mut self, ticket: Ticket, result: Result<InstancePage, ApiError>) {
        if ticket.id != self.latest {
            return;
        }
        self.loading = false;
        let page = match result {
            Ok(page) => page,
            Err(err) => return self.error = Some(err.message()),
        };
        self.error = None;
        self.counts = Some(page.counts);
        if ticket.append {
            let fresh: Vec<_> =
                page.items.into_iter().filter(|i| !self.items.iter().any(|seen| seen.id == i.id)).collect();
            self.items.extend(fresh);
            self.next_cursor = page.next_cursor;
        } else {
            let kept_after = match (page.next_cursor.is_some(), self.loaded, page.items.last()) {
                // More rows were loaded than the first page holds: keep those beyond it.
                (true, true, Some(last)) => self.items.iter().filter(|i| i.id < last.id).cloned().collect::<Vec<_>>(),
                _ => Vec::new(),
            };
            let beyond_first = !kept_after.is_empty();
            self.items = page.items;
            self.items.extend(kept_after);
            if !beyond_first {
                self.next_cursor = page.next_cursor;
            }
        }
        self.loaded = true;
    }

    /// A live status change of instance `id`, shown at once if its row is loaded.
    pub fn restatus(&mut self, id: &str, status: InstanceStatus) {
        if let Some(row) = self.items.iter_mut().find(|i| i.id == id) {
            row.status = status;
        }
    }

    pub fn more_cursor(&self) -> Option<String> {
        if self.loading {
            None
        } else {
            self.next_cursor.clone()
        }
    }

    /// True once a load finished with nothing to show.
    pub fn is_empty(&self) -> bool {
        self.loaded && !self.loading && self.error.is_none() && self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn row(id: &str, status: InstanceStatus) -> InstanceSummary {
        InstanceSummary {
            id: id.to_owned(),
            workflow_id: "w".to_owned(),
            workflow_name: Some("Nightly sync".to_owned()),
            version: 1,
            status,
            key: None,
            error: None,
            created_at: Utc::now(),
            started_at: None,
            ended_at: None,
        }
    }

    fn page(ids: &[&str], next: Option<&str>) -> InstancePage {
        InstancePage {
            items: ids.iter().map(|id| row(id, InstanceStatus::Running)).collect(),
            next_cursor: next.map(str::to_owned),
            counts: StatusCounts::of([(InstanceStatus::Running, ids.len() as i64)]),
        }
    }

    fn ids(list: &InstanceList) -> Vec<&str> {
        list.items.iter().map(|i| i.id.as_str()).collect()
    }

    #[test]
    fn load_more_appends_and_a_live_refresh_keeps_the_rows_below_the_first_page() {
        let mut list = InstanceList::default();
        let t = list.begin(false);
        list.finish(t, Ok(page(&["9", "8"], Some("8"))));
        let t = list.begin(true);
        list.finish(t, Ok(page(&["7", "6"], None)));
        assert_eq!(ids(&list), ["9", "8", "7", "6"]);
        // A new instance "a" arrives at the top; the first page now ends at "9".
        let t = list.begin(false);
        list.finish(t, Ok(page(&["a", "9"], Some("9"))));
        assert_eq!(ids(&list), ["a", "9", "8", "7", "6"]);
        assert_eq!(list.next_cursor, None, "the rows further down were complete already");
    }

    #[test]
    fn a_late_answer_to_an_older_request_is_ignored() {
        let mut list = InstanceList::default();
        let old = list.begin(false);
        let new = list.begin(false);
        list.finish(new, Ok(page(&["2"], None)));
        list.finish(old, Ok(page(&["1"], None)));
        assert_eq!(ids(&list), ["2"]);
    }

    #[test]
    fn a_status_change_recolours_its_row_and_empty_is_only_said_after_a_load() {
        let mut list = InstanceList::default();
        assert!(!list.is_empty());
        let t = list.begin(false);
        list.finish(t, Ok(page(&["1"], None)));
        list.restatus("1", InstanceStatus::Failed);
        assert_eq!(list.items[0].status, InstanceStatus::Failed);
        let t = list.begin(false);
        list.finish(t, Ok(page(&[], None)));
        assert!(list.is_empty());
    }
}
