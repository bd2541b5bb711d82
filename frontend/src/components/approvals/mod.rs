//! Approvals: the inbox (`inbox_page`, `approval_row`), one approval's page (`approval_page`) with
//! its parts, and the header's link with the count of approvals waiting for the signed-in
//! person (`approvals_link`).

pub mod approval_facts;
pub mod approval_page;
pub mod approval_row;
pub mod approval_run;
pub mod approvals_link;
pub mod decision_form;
pub mod decisions_list;
pub mod inbox_page;

use crate::api_approvals;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// How many open approvals the signed-in person may decide, as the header's badge shows it.
/// The layout provides it, so a decision made on any page recounts at once.
#[derive(Clone, Copy)]
pub struct WaitingCount(RwSignal<Option<u64>>);

impl WaitingCount {
    pub fn provide() {
        provide_context(WaitingCount(RwSignal::new(None)));
    }

    /// The layout's, read when a component is made (context is gone after an `await`).
    pub fn here() -> Option<WaitingCount> {
        use_context::<WaitingCount>()
    }

    /// The last count read; `None` until one was.
    pub fn get(self) -> Option<u64> {
        self.0.get()
    }

    /// Reads the count again. A failure keeps the last count: a badge is no place for an error
    /// (and a 401 has sent the app to sign-in already).
    pub fn recount(self) {
        spawn_local(async move {
            if let Ok(n) = api_approvals::count().await {
                self.0.try_set(Some(n));
            }
        });
    }
}
