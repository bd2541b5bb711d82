//! "Import JSON": creates a workflow from an exported file (or a bare definition).

use crate::api;
use crate::transfer;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::wasm_bindgen::JsCast;
use trellis_model::api::Workflow;

#[component]
pub fn ImportButton(on_imported: Callback<Workflow>, on_error: Callback<String>) -> impl IntoView {
    let on_change = move |ev: leptos::ev::Event| {
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
        let Some(file) = input.files().and_then(|files| files.get(0)) else { return };
        input.set_value("");
        spawn_local(async move {
            let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
                Ok(text) => text.as_string().unwrap_or_default(),
                Err(_) => return on_error.run("The file could not be read.".into()),
            };
            let body = match transfer::import(&file.name(), &text) {
                Ok(body) => body,
                Err(why) => return on_error.run(why),
            };
            match api::create_workflow(&body).await {
                Ok(wf) => on_imported.run(wf),
                Err(err) => on_error.run(err.message()),
            }
        });
    };
    view! {
        <label class="import button-link">
            "Import JSON"
            <input type="file" accept="application/json,.json" data-testid="import-file" class="visually-hidden" on:change=on_change />
        </label>
    }
}
