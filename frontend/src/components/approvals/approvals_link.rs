//! "Approvals" in the header, with a badge counting the open approvals the signed-in person may
//! decide. Recounted on every change of page and every 15 s, so a new request shows up without
//! a reload. A link of its own rather than one more header section: one more section wraps an
//! admin's header to a second line at 1280 px (see `pages.rs`).

use super::WaitingCount;
use crate::pages::section_holds;
use crate::urls::APPROVALS_PAGE;
use leptos::prelude::*;
use leptos_router::hooks::use_location;
use std::time::Duration;

/// How often the badge is recounted while a page stays open.
const RECOUNT: Duration = Duration::from_secs(15);

#[component]
pub fn ApprovalsLink() -> impl IntoView {
    let Some(waiting) = WaitingCount::here() else { return ().into_any() };
    let path = use_location().pathname;
    Effect::new(move |_| {
        path.track();
        waiting.recount();
    });
    let every = set_interval_with_handle(move || waiting.recount(), RECOUNT).ok();
    on_cleanup(move || {
        if let Some(handle) = every {
            handle.clear();
        }
    });
    let current = move || section_holds(APPROVALS_PAGE, &path.get()).then_some("page");
    let count = move || waiting.get().filter(|n| *n > 0);
    view! {
        <a href=APPROVALS_PAGE class="approvals-link" data-testid="approvals-link" title="Approvals" aria-current=current>
            // The approval node's own icon, shown for the label where the header is crowded.
            <span class="approvals-icon" aria-hidden="true">"✓"</span>
            <span class="approvals-label">"Approvals"</span>
            {move || count().map(|n| view! {
                <span class="count-badge" data-testid="approvals-count">{n}</span>
                <span class="visually-hidden">" waiting for you"</span>
            })}
        </a>
    }
    .into_any()
}
