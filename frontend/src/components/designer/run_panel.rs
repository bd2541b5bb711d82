//! Starting an instance of the latest published version with JSON input, then opening it.

use crate::api;
use crate::components::designer::json_input::JsonInput;
use crate::components::designer::state::Designer;
use crate::urls;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_navigate;
use trellis_model::api::StartInstance;

#[component]
pub fn RunPanel() -> impl IntoView {
    let d = expect_context::<Designer>();
    let navigate = use_navigate();
    let input = RwSignal::new("{}".to_owned());
    let error = RwSignal::new(None::<String>);
    let pending = RwSignal::new(false);
    let start = move |_| {
        let parsed: serde_json::Value = match serde_json::from_str(input.get_untracked().trim()) {
            Ok(v) => v,
            Err(e) => {
                error.set(Some(format!("The input is not valid JSON: {e}")));
                return;
            }
        };
        error.set(None);
        pending.set(true);
        let navigate = navigate.clone();
        spawn_local(async move {
            let body = StartInstance { input: Some(parsed), version: None, key: None };
            let result = api::start_instance(&d.id(), &body).await;
            pending.set(false);
            match result {
                Ok(started) => navigate(&urls::instance_page(&started.id), Default::default()),
                Err(err) => error.set(Some(err.message())),
            }
        });
    };
    view! {
        <section class="run" aria-label="Run">
            <h2>"Run"</h2>
            <p class="hint">"Starts the latest published version. Publish your changes first."</p>
            <JsonInput label="Input (JSON)" rows="8" test_id="run-input" text=input />
            {move || error.get().map(|m| view! { <p class="alert" role="alert">{m}</p> })}
            <button type="button" class="primary" disabled=move || pending.get() on:click=start>"Start"</button>
        </section>
    }
}
