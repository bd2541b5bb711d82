//! The home page: the signed-in header, search, "New workflow", and the paged workflow list.

use crate::api;
use crate::components::{
    app_header::AppHeader, error_alert::ErrorAlert, import_button::ImportButton, new_workflow_form::NewWorkflowForm,
    search_box::SearchBox, session::use_session, workflow_table::WorkflowTable,
};
use crate::list::{empty_message, WorkflowList};
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_query_map;
use trellis_model::api::Workflow;

#[component]
pub fn WorkflowsPage() -> impl IntoView {
    let query = use_query_map();
    let search = Memo::new(move |_| query.with(|q| q.get("q").unwrap_or_default()));
    let list = RwSignal::new(WorkflowList::default());
    let show_archived = RwSignal::new(false);
    let action_error = RwSignal::new(None::<String>);
    let session = use_session();

    // Loads the first page for `term`, or the page after `cursor`.
    let load = move |term: String, cursor: Option<String>| {
        let ticket = list.try_update(|l| l.begin(cursor.is_some())).expect("list signal lives with the page");
        spawn_local(async move {
            let result = api::list_workflows(Some(&term), cursor.as_deref(), show_archived.get_untracked()).await;
            if let Err(err) = &result {
                session.note(err);
            }
            list.update(|l| {
                l.finish(ticket, result);
            });
        });
    };

    // Runs on arrival and whenever the search in the address changes.
    Effect::new(move |_| {
        show_archived.track();
        load(search.get(), None)
    });

    let on_created = Callback::new(move |_: Workflow| load(search.get_untracked(), None));
    let on_changed = Callback::new(move |_: ()| {
        action_error.set(None);
        load(search.get_untracked(), None)
    });
    let on_error = Callback::new(move |message: String| action_error.set(Some(message)));
    let load_more = move |_| {
        if let Some(cursor) = list.with_untracked(WorkflowList::more_cursor) {
            load(search.get_untracked(), Some(cursor));
        }
    };

    let items = Signal::derive(move || list.with(|l| l.items.clone()));
    let list_error = Signal::derive(move || list.with(|l| l.error.clone()));
    let empty = Signal::derive(move || list.with(WorkflowList::is_empty).then(|| empty_message(&search.get())));
    let has_more = move || list.with(|l| l.next_cursor.is_some());

    view! {
        <AppHeader username=session.username() />
        <main class="page">
            <div class="toolbar">
                <h1>"Workflows"</h1>
                <SearchBox search=search />
                <NewWorkflowForm on_created=on_created />
                <ImportButton on_imported=on_created on_error=on_error />
                <label class="show-archived">
                    <input
                        type="checkbox"
                        prop:checked=move || show_archived.get()
                        on:change=move |ev| show_archived.set(event_target_checked(&ev))
                    />
                    " Show archived"
                </label>
            </div>
            <ErrorAlert message=action_error />
            <ErrorAlert message=session.error() />
            <ErrorAlert message=list_error />
            <WorkflowTable items=items empty_message=empty on_changed=on_changed on_error=on_error />
            <Show when=has_more>
                <button
                    type="button"
                    class="load-more"
                    disabled=move || list.with(|l| l.loading)
                    on:click=load_more
                >
                    "Load more"
                </button>
            </Show>
        </main>
    }
}
