//! One user on the Users page: the role as a select that saves on change, and the actions.
//! Each action reports a sentence, or the API's refusal, to the page.

use super::users_page::ROLES;
use crate::api_admin;
use crate::components::mutation::Mutation;
use crate::format;
use leptos::prelude::*;
use trellis_model::api::{UpdateUser, UserView};
use trellis_model::UserSource;

#[component]
pub fn UserRow(user: UserView, on_done: Callback<Result<String, String>>) -> impl IntoView {
    let id = StoredValue::new(user.id.clone());
    let name = StoredValue::new(user.username.clone());
    // One change at a time for one user; each reports its sentence or refusal to the page.
    let saving = Mutation::new();
    let change = move |body: UpdateUser, said: String| {
        saving.settle(async move { api_admin::update_user(&id.get_value(), &body).await }, move |outcome| {
            on_done.run(outcome.map(|_| said).map_err(|e| e.message()));
        });
    };
    let set_role = move |role: String| {
        let said = format!("{} is now {role}.", name.get_value());
        change(UpdateUser { role: Some(role), ..UpdateUser::default() }, said);
    };
    let reset = move |_| {
        let prompt = format!("New password for {} (at least 12 characters)", name.get_value());
        let Ok(Some(password)) = window().prompt_with_message(&prompt) else { return };
        let said = format!("{}'s password was reset; their sessions ended.", name.get_value());
        change(UpdateUser { password: Some(password), ..UpdateUser::default() }, said);
    };
    let disabled = user.disabled;
    let toggle = move |_| {
        let said = if disabled { "enabled" } else { "disabled: their sessions and API keys stopped working" };
        change(
            UpdateUser { disabled: Some(!disabled), ..UpdateUser::default() },
            format!("{} {said}.", name.get_value()),
        );
    };
    let delete = move |_| {
        if !window().confirm_with_message(&format!("Delete {}?", name.get_value())).unwrap_or(false) {
            return;
        }
        saving.settle(async move { api_admin::delete_user(&id.get_value()).await }, move |outcome| {
            on_done.run(outcome.map(|()| format!("Deleted {}.", name.get_value())).map_err(|e| e.message()));
        });
    };
    let single_sign_on = user.source == UserSource::Oidc;
    let set_groups = move |_| {
        let prompt = format!("Groups of {} (comma-separated; the role mapping reads them)", name.get_value());
        let Ok(Some(text)) = window().prompt_with_message(&prompt) else { return };
        let groups: Vec<String> = text.split(',').map(str::trim).filter(|g| !g.is_empty()).map(str::to_owned).collect();
        let said = format!(
            "{}'s groups are now: {}.",
            name.get_value(),
            if groups.is_empty() { "none".to_owned() } else { groups.join(", ") }
        );
        change(UpdateUser { groups: Some(groups), ..UpdateUser::default() }, said);
    };
    let source = if single_sign_on { "SSO" } else { "password" };
    let source_title = user.subject.clone().map(|s| format!("subject {s}"));
    // An empty cell reads as "not loaded"; a dash says "no groups".
    let groups = if user.groups.is_empty() { "—".to_owned() } else { user.groups.join(", ") };
    let role = user.role;
    view! {
        <tr data-testid="user-row" data-username=user.username.clone() class:disabled=disabled>
            <td class="name">{user.username.clone()}</td>
            <td>
                <select aria-label=format!("Role of {}", user.username) data-testid="user-role"
                    on:change=move |ev| set_role(event_target_value(&ev))>
                    {ROLES.iter().map(|r| view! { <option value=r.as_str() selected=role == *r>{r.as_str()}</option> }).collect_view()}
                </select>
            </td>
            <td data-testid="user-source" title=source_title>{source}</td>
            <td class="groups" data-testid="user-groups">{groups}</td>
            <td data-testid="user-state">{if disabled { "disabled" } else { "enabled" }}</td>
            <td class="updated">{format::timestamp(&user.created_at)}</td>
            <td class="actions">
                <Show when=move || !single_sign_on>
                    <button type="button" on:click=reset>"Reset password"</button>
                    <button type="button" on:click=set_groups>"Groups…"</button>
                </Show>
                <button type="button" data-testid="user-toggle" class:danger=!disabled on:click=toggle>
                    {if disabled { "Enable" } else { "Disable" }}
                </button>
                <button type="button" class="danger" on:click=delete>"Delete"</button>
            </td>
        </tr>
    }
}
