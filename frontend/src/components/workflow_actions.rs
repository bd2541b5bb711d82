//! The buttons of one workflow row: rename, export as JSON, archive or unarchive.

use crate::api;
use crate::components::mutation::Mutation;
use crate::transfer;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::wasm_bindgen::{JsCast, JsValue};
use trellis_model::api::{UpdateWorkflow, WorkflowSummary};

#[component]
pub fn WorkflowActions(
    workflow: WorkflowSummary,
    /// Called after a change, so the list reloads.
    on_changed: Callback<()>,
    on_error: Callback<String>,
) -> impl IntoView {
    let id = StoredValue::new(workflow.id.clone());
    let name = StoredValue::new(workflow.name.clone());
    let archived = workflow.archived;
    // Rename and archive report to the list, one change at a time.
    let changing = Mutation::new();
    let report = move |result: Result<(), crate::error::ApiError>| match result {
        Ok(_) => on_changed.run(()),
        Err(err) => on_error.run(err.message()),
    };
    let rename = move |_| {
        let Ok(Some(entered)) = window().prompt_with_message_and_default("New name", &name.get_value()) else { return };
        let Some(entered) = crate::format::entered_name(&entered) else { return };
        let body = UpdateWorkflow { name: Some(entered), description: None };
        changing.settle(async move { api::update_workflow(&id.get_value(), &body).await.map(drop) }, report);
    };
    let toggle_archive = move |_| {
        changing.settle(async move { api::set_archived(&id.get_value(), !archived).await.map(drop) }, report);
    };
    let export = move |_| {
        spawn_local(async move {
            match api::get_workflow(&id.get_value()).await {
                Ok(wf) => {
                    if let Err(why) = download(&transfer::file_name(&wf.summary.name), &transfer::export(&wf)) {
                        on_error.run(why);
                    }
                }
                Err(err) => on_error.run(err.message()),
            }
        });
    };
    let label = workflow.name.clone();
    view! {
        <div class="row-actions">
            <button type="button" on:click=rename aria-label=format!("Rename {label}")>"Rename"</button>
            <button type="button" on:click=export aria-label=format!("Export {label}")>"Export"</button>
            <button type="button" on:click=toggle_archive aria-label=format!("{} {label}", if archived { "Unarchive" } else { "Archive" })>
                {if archived { "Unarchive" } else { "Archive" }}
            </button>
        </div>
    }
}

/// Offers `text` as a file download named `file_name`.
fn download(file_name: &str, text: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/json");
    let blob =
        web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).map_err(|_| "could not build the file")?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|_| "could not offer the file")?;
    let anchor: web_sys::HtmlAnchorElement =
        document().create_element("a").map_err(|_| "no document")?.unchecked_into();
    anchor.set_href(&url);
    anchor.set_download(file_name);
    anchor.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}
