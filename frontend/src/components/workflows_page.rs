//! The home page: the signed-in header, search, "New workflow", and the paged workflow list.

use crate::api;
use crate::components::{
    app_header::AppHeader, error_alert::ErrorAlert, import_button::ImportButton, new_workflow_form::NewWorkflowForm,
    search_box::SearchBox, workflow_table::WorkflowTable,
};
use crate::error::ApiError;
use crate::list::{empty_message, WorkflowList};
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_query_map};
use leptos_router::NavigateOptions;
use trellis_model::api::Workflow;

#[component]
pub fn WorkflowsPage() -> impl IntoView {
    let query = use_query_map();
    let search = Memo::new(move |_| query.with(|q| q.get("q").unwrap_or_default()));
    let list = RwSignal::new(WorkflowList::default());
    let show_archived = RwSignal::new(false);
    let action_error = RwSignal::new(None::<String>);
    // Set by any call answered 401; one effect turns it into the redirect.
    let signed_out = RwSignal::new(false);

    let me = LocalResource::new(api::me);
    Effect::new(move |_| {
        if let Some(Err(err)) = me.get() {
            if err.is_unauthorized() {
                signed_out.set(true);
            }
        }
    });

    let navigate = use_navigate();
    Effect::new(move |_| {
        if signed_out.get() {
            navigate("/login", NavigateOptions { replace: true, ..Default::default() });
        }
    });

    // Loads the first page for `term`, or the page after `cursor`.
    let load = move |term: String, cursor: Option<String>| {
        let ticket = list.try_update(|l| l.begin(cursor.is_some())).expect("list signal lives with the page");
        spawn_local(async move {
            let result = api::list_workflows(Some(&term), cursor.as_deref(), show_archived.get_untracked()).await;
            if result.as_ref().is_err_and(ApiError::is_unauthorized) {
                signed_out.set(true);
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

    let username = Signal::derive(move || me.get().and_then(Result::ok).map(|me| me.username));
    let me_error = Signal::derive(move || match me.get() {
        Some(Err(err)) if !err.is_unauthorized() => Some(err.message()),
        _ => None,
    });
    let items = Signal::derive(move || list.with(|l| l.items.clone()));
    let list_error = Signal::derive(move || list.with(|l| l.error.clone()));
    let empty = Signal::derive(move || list.with(WorkflowList::is_empty).then(|| empty_message(&search.get())));
    let has_more = move || list.with(|l| l.next_cursor.is_some());

    view! {
        <AppHeader username=username />
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
            <ErrorAlert message=me_error />
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
