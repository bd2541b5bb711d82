//! Starting an instance with a typed input: the form the workflow's `input_schema` describes
//! (see [`crate::run_form`]), a "JSON" toggle to the raw box and back (one input value behind
//! both, so nothing typed is lost), and a refused start's violations shown at their fields.

pub mod fields;

use crate::api;
use crate::components::designer::json_input::JsonInput;
use crate::components::mutation::Mutation;
use crate::error::ApiError;
use crate::run_form::{self, FormField};
use fields::{field_view, FormState};
use leptos::prelude::*;
use serde_json::Value;
use trellis_model::api::StartInstance;
use trellis_model::Issue;

/// The schema of the version a start runs: the latest published one's.
async fn latest_schema(workflow: &str) -> Result<Option<Value>, ApiError> {
    let Some(latest) = api::get_workflow(workflow).await?.summary.latest_version else { return Ok(None) };
    Ok(api::get_version(workflow, latest).await?.definition.settings.input_schema)
}

/// The form (or the JSON box alone) and a Start button; `on_started` gets the new instance's id.
/// `input`: what the form starts with (else the schema's defaults).
#[component]
pub fn RunInput(
    workflow: String,
    #[prop(optional)] input: Option<Value>,
    on_started: Callback<String>,
) -> impl IntoView {
    let schema = LocalResource::new({
        let workflow = workflow.clone();
        move || {
            let workflow = workflow.clone();
            async move { latest_schema(&workflow).await }
        }
    });
    let workflow = StoredValue::new(workflow);
    let input = StoredValue::new(input);
    move || {
        schema.get().map(|loaded| {
            let schema = loaded.ok().flatten();
            let form = schema.as_ref().and_then(run_form::form);
            let start_with = input.get_value().or_else(|| form.as_ref().map(run_form::initial));
            view! { <RunForm workflow=workflow.get_value() form=form input=start_with on_started=on_started /> }
        })
    }
}

#[component]
fn RunForm(
    workflow: String,
    form: Option<FormField>,
    input: Option<Value>,
    on_started: Callback<String>,
) -> impl IntoView {
    let value = input.unwrap_or_else(|| serde_json::json!({}));
    let st = FormState { input: RwSignal::new(value.clone()), errors: RwSignal::new(Vec::<Issue>::new()) };
    let has_form = form.is_some();
    let json_mode = RwSignal::new(!has_form);
    let json_text = RwSignal::new(serde_json::to_string_pretty(&value).unwrap_or_default());
    let message = RwSignal::new(None::<String>);
    // A refused start shows where a JSON mistake does.
    let starting = Mutation::reporting_to(message);
    // The JSON box and the form share one value: switching writes the side being left into it.
    let toggle = move |_| {
        if json_mode.get_untracked() {
            match serde_json::from_str::<Value>(json_text.get_untracked().trim()) {
                Ok(v) => st.input.set(v),
                Err(e) => return message.set(Some(format!("The input is not valid JSON: {e}"))),
            }
        } else {
            json_text.set(serde_json::to_string_pretty(&st.input.get_untracked()).unwrap_or_default());
        }
        message.set(None);
        json_mode.update(|m| *m = !*m);
    };
    let workflow = StoredValue::new(workflow);
    let start = move |_| {
        let body = if json_mode.get_untracked() {
            match serde_json::from_str::<Value>(json_text.get_untracked().trim()) {
                Ok(v) => v,
                Err(e) => return message.set(Some(format!("The input is not valid JSON: {e}"))),
            }
        } else {
            st.input.get_untracked()
        };
        message.set(None);
        st.errors.set(Vec::new());
        let request = StartInstance { input: Some(body), version: None, key: None };
        starting.run_or(
            async move { api::start_instance(&workflow.get_value(), &request).await },
            move |started| on_started.run(started.id),
            move |err| {
                if let ApiError::Problem(p) = err {
                    st.errors.set(p.errors.iter().filter(|i| i.code == "input_schema").cloned().collect());
                }
            },
        );
    };
    let form = StoredValue::new(form);
    let body = move || {
        match (json_mode.get(), form.get_value()) {
        (false, Some(root)) => view! { <div class="run-form" data-testid="run-form">{field_view(root, String::new(), st)}</div> }.into_any(),
        _ => view! { <JsonInput label="Input (JSON)" rows="8" test_id="run-input" text=json_text />{move || unplaced(st, None)}}.into_any(),
    }
    };
    view! {
        {has_form.then(|| view! {
            <button type="button" class="link" data-testid="run-json-toggle" aria-pressed=move || json_mode.get().to_string() on:click=toggle>
                {move || if json_mode.get() { "Form" } else { "JSON" }}
            </button>
        })}
        {body}
        {move || (!json_mode.get()).then(|| unplaced(st, form.get_value()))}
        {move || message.get().map(|m| view! { <p class="alert" role="alert" data-testid="run-error">{m}</p> })}
        <button type="button" class="primary" data-testid="run-start" disabled=starting.pending() on:click=start>"Start"</button>
    }
}

/// The violations no field shows (all of them in the JSON box), listed with their paths.
pub fn unplaced(st: FormState, form: Option<FormField>) -> impl IntoView {
    move || {
        let shown = form.as_ref().map(|f| st.input.with(|v| run_form::pointers(f, v))).unwrap_or_default();
        let rest: Vec<String> = st.errors.with(|all| {
            all.iter()
                .filter(|i| !shown.contains(&run_form::violation_target(i.path.as_deref().unwrap_or(""), &i.message)))
                .map(|i| i.message.clone())
                .collect()
        });
        (!rest.is_empty()).then(|| {
            view! {
                <ul class="problems" aria-label="Problems with the input" data-testid="run-violations">
                    {rest.into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}
                </ul>
            }
        })
    }
}
