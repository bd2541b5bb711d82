//! `/workflows`: search, "New workflow", import, and the paged workflow list.

use crate::api;
use crate::components::paged::{LoadMore, Paged};
use crate::components::{
    error_alert::ErrorAlert, import_button::ImportButton, new_workflow_form::NewWorkflowForm, search_box::SearchBox,
    workflow_table::WorkflowTable,
};
use crate::format::no_workflows;
use crate::paged::Refresh;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use trellis_model::api::Workflow;

#[component]
pub fn WorkflowsPage() -> impl IntoView {
    let query = use_query_map();
    let search = Memo::new(move |_| query.with(|q| q.get("q").unwrap_or_default()));
    let show_archived = RwSignal::new(false);
    let action_error = RwSignal::new(None::<String>);
    let paged = Paged::new(Refresh::Replace, move |cursor| async move {
        let (term, archived) = (search.get_untracked(), show_archived.get_untracked());
        api::list_workflows(Some(&term), cursor.as_deref(), archived).await.map(|page| (page, ()))
    });

    // Runs on arrival and whenever the search in the address changes.
    Effect::new(move |_| {
        show_archived.track();
        // Read, not only tracked: the memo must be computed to follow the address.
        let _search = search.get();
        paged.reload();
    });

    let on_created = Callback::new(move |_: Workflow| paged.reload());
    let on_changed = Callback::new(move |_: ()| {
        action_error.set(None);
        paged.reload();
    });
    let on_error = Callback::new(move |message: String| action_error.set(Some(message)));
    let empty = paged.empty_text(move || no_workflows(&search.get()));

    view! {
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
            <WorkflowTable items=paged.items() empty_message=empty on_changed=on_changed on_error=on_error />
            <LoadMore paged=paged />
            <p class="muted">"Workflows that call one API can share its limits: see " <a href="/limits">"Limits"</a> "."</p>
        </main>
    }
}
