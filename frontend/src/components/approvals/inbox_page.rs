//! `/approvals`: the inbox. "Waiting for me" (the default), "Decided by me" and, for operators
//! and up, "All" with its open/closed choice; the tab lives in the address, so it survives a
//! reload and can be bookmarked. A table of approvals, newest first, a page at a time.

use super::approval_row::ApprovalRow;
use super::WaitingCount;
use crate::api_approvals;
use crate::approvals::{empty_text, filters, inbox_page, Inbox, InboxRow, Shown};
use crate::components::fetch::Loading;
use crate::components::paged::{LoadMore, Paged};
use crate::components::run::state::browser_now;
use crate::components::session::use_session;
use crate::components::table_parts::TableHead;
use crate::paged::{PagedList, Refresh};
use crate::urls;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};
use trellis_model::api::Page;

// Where it stands comes right after the question: on a phone the table scrolls sideways, and
// the first columns are what shows.
const COLUMNS: &[(&str, &str)] = &[
    ("Approval", ""),
    ("Status", ""),
    ("Progress", ""),
    ("Workflow", ""),
    ("Node", ""),
    ("Requested", "updated"),
    ("Due", "updated"),
];

#[component]
pub fn InboxPage() -> impl IntoView {
    let query = use_query_map();
    let inbox = Memo::new(move |_| Inbox::parse(query.with(|q| q.get("show")).as_deref()));
    let shown = Memo::new(move |_| Shown::parse(query.with(|q| q.get("status")).as_deref()));
    let session = use_session();
    let paged = Paged::new(Refresh::Replace, move |cursor| {
        let url = urls::approval_list(&filters(inbox.get_untracked(), shown.get_untracked()), cursor.as_deref(), 50);
        async move {
            let list = api_approvals::list(&url).await?;
            let items = list.items.into_iter().map(InboxRow::from).collect();
            Ok((Page { items, next_cursor: list.next_cursor }, ()))
        }
    });
    // The clock "5 min ago" is read against: when the list was last read.
    let now = RwSignal::new(browser_now());
    let reload = move || {
        now.set(browser_now());
        paged.reload();
    };
    Effect::new(move |_| {
        let _tab = (inbox.get(), shown.get());
        reload();
    });
    // A change of the badge's count (a decision made here, a request arriving) reads the list
    // again; its first reading is no change.
    let waiting = WaitingCount::here();
    let count = Memo::new(move |_| waiting.and_then(WaitingCount::get));
    Effect::new(move |before: Option<Option<u64>>| {
        let n = count.get();
        if matches!(before, Some(Some(b)) if Some(b) != n) {
            reload();
        }
        n
    });

    view! {
        <main class="page wide approvals-inbox">
            <div class="toolbar">
                <h1>"Approvals"</h1>
                <button type="button" on:click=move |_| reload()>"Refresh"</button>
            </div>
            <p class="muted">
                "Questions runs ask people: a workflow's approval node stops its run until enough of the people it \
                 names approve, or one rejects."
            </p>
            <div class="inbox-bar">
                <InboxTabs inbox=inbox may_see_all=session.may_act() />
                {move || (inbox.get() == Inbox::All).then(|| view! { <StatusChoice shown=shown /> })}
            </div>
            <table class="workflows approvals" data-testid="approvals-table">
                <TableHead columns=COLUMNS />
                <tbody>
                    {move || body_message(paged.list, inbox.get(), shown.get())}
                    <For each=move || paged.items().get() key=row_key let:row>
                        <ApprovalRow approval=row.approval me=session.username().get_untracked() now=now.get_untracked() />
                    </For>
                </tbody>
            </table>
            <LoadMore paged=paged />
        </main>
    }
}

/// A row is drawn again when its approval changed (a decision, a close), not only when new.
fn row_key(row: &InboxRow) -> (String, &'static str, usize) {
    use crate::paged::Keyed;
    (row.key().to_owned(), row.approval.status.as_str(), row.approval.decisions.len())
}

/// "Loading…" before the first rows, the tab's empty text when it has none.
fn body_message(list: RwSignal<PagedList<InboxRow>>, inbox: Inbox, shown: Shown) -> Option<AnyView> {
    let message = |content: AnyView| {
        view! { <tr><td colspan=COLUMNS.len() class="empty" data-testid="approvals-empty">{content}</td></tr> }
            .into_any()
    };
    list.with(|l| {
        if l.is_empty() {
            Some(message(empty_text(inbox, shown).into_any()))
        } else if l.loading && l.items.is_empty() {
            Some(message(view! { <Loading /> }.into_any()))
        } else {
            None
        }
    })
}

/// The tabs, as links to the inbox's addresses (the current one marked).
#[component]
fn InboxTabs(inbox: Memo<Inbox>, may_see_all: Signal<bool>) -> impl IntoView {
    let tab = move |tab: Inbox| {
        let current = move || (inbox.get() == tab).then_some("page");
        view! {
            <a href=inbox_page(tab, Shown::Open) aria-current=current data-testid=format!("inbox-{}", tab.param())>
                {tab.label()}
            </a>
        }
    };
    view! {
        <nav class="segmented" aria-label="Which approvals">
            {tab(Inbox::Mine)}
            {tab(Inbox::Decided)}
            {move || may_see_all.get().then(|| tab(Inbox::All))}
        </nav>
    }
}

/// The All tab's choice of open, closed or both.
#[component]
fn StatusChoice(shown: Memo<Shown>) -> impl IntoView {
    let navigate = use_navigate();
    let choose = move |ev: leptos::ev::Event| {
        let picked = Shown::parse(Some(&event_target_value(&ev)));
        navigate(&inbox_page(Inbox::All, picked), Default::default());
    };
    view! {
        <label class="inline-select">
            "Show "
            <select data-testid="inbox-status" on:change=choose>
                {Shown::CHOICES.into_iter().map(|s| view! {
                    <option value=s.param() selected=move || shown.get() == s>{s.label()}</option>
                }).collect_view()}
            </select>
        </label>
    }
}
