//! The role a new user or API key gets: one of every role, `role` the one chosen.

use super::users_page::ROLES;
use leptos::prelude::*;

#[component]
pub fn RoleSelect(test_id: &'static str, role: RwSignal<String>) -> impl IntoView {
    view! {
        <label>"Role "
            <select data-testid=test_id on:change=move |ev| role.set(event_target_value(&ev))>
                {ROLES.iter().map(|r| r.as_str()).map(|r| view! { <option value=r selected=move || role.get() == r>{r}</option> }).collect_view()}
            </select>
        </label>
    }
}
