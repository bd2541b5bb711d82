//! The "New workflow" form: a name, then the new workflow is created with an empty draft.

use crate::api;
use crate::components::error_alert::ErrorAlert;
use crate::format;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::{CreateWorkflow, Workflow};

#[component]
pub fn NewWorkflowForm(#[prop(into)] on_created: Callback<Workflow>) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(entered) = format::entered_name(&name.get_untracked()) else {
            error.set(Some("Give the workflow a name.".to_owned()));
            return;
        };
        if pending.get_untracked() {
            return;
        }
        pending.set(true);
        error.set(None);
        spawn_local(async move {
            let body = CreateWorkflow { name: entered, description: None, definition: None };
            let result = api::create_workflow(&body).await;
            pending.set(false);
            match result {
                Ok(workflow) => {
                    name.set(String::new());
                    on_created.run(workflow);
                }
                Err(err) => error.set(Some(err.message())),
            }
        });
    };

    view! {
        <form class="new-workflow" on:submit=on_submit>
            <input
                name="name"
                placeholder="New workflow name"
                aria-label="New workflow name"
                maxlength="200"
                prop:value=move || name.get()
                on:input=move |ev| name.set(event_target_value(&ev))
            />
            <button type="submit" class="primary" disabled=move || pending.get()>
                "New workflow"
            </button>
            <ErrorAlert message=error />
        </form>
    }
}
