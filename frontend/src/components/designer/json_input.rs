//! A labelled text area for JSON typed by hand (the sample input of expression previews, the
//! input of a run): what is typed goes straight into `text`.

use leptos::prelude::*;

#[component]
pub fn JsonInput(
    label: &'static str,
    rows: &'static str,
    test_id: &'static str,
    text: RwSignal<String>,
) -> impl IntoView {
    view! {
        <label class="field">
            <span class="field-label">{label}</span>
            <textarea
                rows=rows
                spellcheck="false"
                data-testid=test_id
                // Follows `text` when it is set from elsewhere (a preview's sample from the last
                // run); typing sets the same value back, which leaves the caret where it is.
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
            ></textarea>
        </label>
    }
}
