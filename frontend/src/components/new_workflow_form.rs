//! The "New workflow" form: a name, then the new workflow is created with an empty draft.

use crate::api;
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use crate::format;
use leptos::prelude::*;
use trellis_model::api::{CreateWorkflow, Workflow};

#[component]
pub fn NewWorkflowForm(#[prop(into)] on_created: Callback<Workflow>) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let create = Mutation::new();

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(entered) = format::entered_name(&name.get_untracked()) else {
            create.fail(Some("Give the workflow a name.".to_owned()));
            return;
        };
        let body = CreateWorkflow { name: entered, description: None, definition: None };
        create.run(async move { api::create_workflow(&body).await }, move |workflow: Workflow| {
            name.set(String::new());
            on_created.run(workflow);
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
            <button type="submit" class="primary" disabled=create.pending()>
                "New workflow"
            </button>
            <ErrorAlert message=create.error() />
        </form>
    }
}
