//! The workflow list as the page holds it: pages appended by "Load more", reset by a new search,
//! and answers that arrive after a newer request started ignored (a slow first search must not
//! overwrite a faster second one).

use crate::error::ApiError;
use trellis_model::api::{Page, WorkflowSummary};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkflowList {
    pub items: Vec<WorkflowSummary>,
    pub next_cursor: Option<String>,
    pub loading: bool,
    pub error: Option<String>,
    /// Bumped by every request; only the answer carrying the latest value is applied.
    latest: u64,
}

/// Identifies one request, and whether its page continues the list or replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    id: u64,
    append: bool,
}

impl WorkflowList {
    /// Marks a request as started. A first page keeps the old rows on screen until it arrives,
    /// so the table does not flicker empty during a refresh.
    pub fn begin(&mut self, append: bool) -> Ticket {
        self.latest += 1;
        self.loading = true;
        self.error = None;
        Ticket { id: self.latest, append }
    }

    /// Applies an answer; returns false (and changes nothing) when a newer request superseded it.
    pub fn finish(&mut self, ticket: Ticket, result: Result<Page<WorkflowSummary>, ApiError>) -> bool {
        if ticket.id != self.latest {
            return false;
        }
        self.loading = false;
        match result {
            Ok(page) => {
                if ticket.append {
                    // A row created between page loads can appear on two pages; show it once.
                    let fresh = page.items.into_iter().filter(|w| !self.items.iter().any(|seen| seen.id == w.id));
                    let fresh: Vec<_> = fresh.collect();
                    self.items.extend(fresh);
                } else {
                    self.items = page.items;
                }
                self.next_cursor = page.next_cursor;
            }
            Err(err) => self.error = Some(err.message()),
        }
        true
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
        !self.loading && self.error.is_none() && self.items.is_empty()
    }
}

/// What the empty table says, depending on whether a search filtered everything out.
pub fn empty_message(search: &str) -> String {
    match search.trim() {
        "" => "No workflows yet. Create the first one above.".to_owned(),
        q => format!("No workflows match “{q}”."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn wf(id: &str) -> WorkflowSummary {
        let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        WorkflowSummary {
            id: id.into(),
            name: format!("workflow {id}"),
            description: None,
            latest_version: None,
            archived: false,
            created_at: at,
            updated_at: at,
        }
    }

    fn page(ids: &[&str], next: Option<&str>) -> Page<WorkflowSummary> {
        Page { items: ids.iter().map(|id| wf(id)).collect(), next_cursor: next.map(Into::into) }
    }

    fn ids(list: &WorkflowList) -> Vec<&str> {
        list.items.iter().map(|w| w.id.as_str()).collect()
    }

    #[test]
    fn load_more_appends_and_a_refresh_replaces() {
        let mut list = WorkflowList::default();
        let first = list.begin(false);
        assert!(list.finish(first, Ok(page(&["a", "b"], Some("c1")))));
        assert_eq!(list.more_cursor().as_deref(), Some("c1"));

        let more = list.begin(true);
        assert_eq!(list.more_cursor(), None, "no second Load more while one is in flight");
        list.finish(more, Ok(page(&["b", "c"], None)));
        assert_eq!(ids(&list), ["a", "b", "c"]);
        assert_eq!(list.more_cursor(), None);

        let refresh = list.begin(false);
        assert_eq!(ids(&list), ["a", "b", "c"], "old rows stay until the new page arrives");
        list.finish(refresh, Ok(page(&["z"], None)));
        assert_eq!(ids(&list), ["z"]);
    }

    #[test]
    fn a_superseded_answer_is_ignored() {
        let mut list = WorkflowList::default();
        let slow = list.begin(false);
        let fast = list.begin(false);
        assert!(list.finish(fast, Ok(page(&["new"], None))));
        assert!(!list.finish(slow, Ok(page(&["old"], None))));
        assert_eq!(ids(&list), ["new"]);
        assert!(!list.loading);
    }

    #[test]
    fn errors_are_kept_as_a_message_and_are_not_an_empty_list() {
        let mut list = WorkflowList::default();
        let t = list.begin(false);
        list.finish(t, Err(ApiError::from_response(403, r#"{"type":"x","title":"Forbidden","status":403}"#)));
        assert_eq!(list.error.as_deref(), Some("Forbidden"));
        assert!(!list.is_empty());
        let t = list.begin(false);
        assert_eq!(list.error, None);
        list.finish(t, Ok(page(&[], None)));
        assert!(list.is_empty());
    }

    #[test]
    fn the_empty_message_mentions_the_search() {
        assert!(empty_message("").starts_with("No workflows yet"));
        assert_eq!(empty_message(" <b> "), "No workflows match “<b>”.");
    }
}
