//! The retention policy's ages, in days, each with what the server said of it, and "Save…",
//! which asks for a preview of what saving would delete first.

use super::retention_page::FIELDS;
use crate::error::ApiError;
use leptos::prelude::*;

#[component]
pub fn PolicyForm(
    /// Whether the policy is the default one (the only one with an audit log age).
    default: Signal<bool>,
    values: [RwSignal<String>; 5],
    error: RwSignal<Option<ApiError>>,
    /// A value changed: a preview shown no longer holds.
    on_edit: Callback<()>,
    on_save: Callback<()>,
) -> impl IntoView {
    view! {
        <form class="retention-form" aria-label="Retention policy" on:submit=|ev| ev.prevent_default()>
            {FIELDS.iter().zip(values).map(|((key, label), value)| {
                let key = *key;
                let shown = move || key != "audit_days" || default.get();
                view! {
                    <Show when=shown>
                        <PolicyField key=key label=label value=value error=error on_input=on_edit />
                    </Show>
                }
            }).collect_view()}
            <button type="button" class="primary" data-testid="retention-preview" on:click=move |_| on_save.run(())>"Save…"</button>
        </form>
    }
}

/// One age of the policy, in days, with what the server said of it.
#[component]
fn PolicyField(
    key: &'static str,
    label: &'static str,
    value: RwSignal<String>,
    error: RwSignal<Option<ApiError>>,
    on_input: Callback<()>,
) -> impl IntoView {
    let refused = move || error.with(|e| e.as_ref().and_then(|e| e.field_message(key)));
    view! {
        <div class="field">
            <label>{label} " "
                <input type="number" min="1" placeholder="forever" data-testid=format!("retention-{key}")
                    prop:value=value on:input=move |ev| { value.set(event_target_value(&ev)); on_input.run(()); } />
                " days"
            </label>
            {move || refused().map(|m| view! { <p class="field-error" data-testid=format!("retention-error-{key}")>{m}</p> })}
        </div>
    }
}
