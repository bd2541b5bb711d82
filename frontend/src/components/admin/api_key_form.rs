//! Creating an API key: its name and role.

use super::role_select::RoleSelect;
use leptos::prelude::*;

#[component]
pub fn KeyForm(name: RwSignal<String>, role: RwSignal<String>, on_create: Callback<()>) -> impl IntoView {
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        on_create.run(());
    };
    view! {
        <form class="inline-form" aria-label="Create an API key" on:submit=submit>
            <label>"Name " <input required data-testid="key-name" prop:value=name on:input=move |ev| name.set(event_target_value(&ev)) /></label>
            <RoleSelect test_id="key-role" role=role />
            <button type="submit" class="primary">"Create key"</button>
        </form>
    }
}
