//! One secret in the list: its name, what it is for, the workflows that reference it, and for
//! admins "Rotate" (a new value, used by the next attempt) and "Delete".

use crate::api_secrets;
use crate::components::mutation::Mutation;
use crate::format;
use leptos::prelude::*;
use trellis_model::api::{Secret, UpdateSecret};

#[component]
pub fn SecretRow(secret: Secret, admin: Signal<bool>, on_done: Callback<Result<String, String>>) -> impl IntoView {
    let name = StoredValue::new(secret.name.clone());
    let rotating = RwSignal::new(false);
    let in_use = !secret.used_by.is_empty();
    let deleting = Mutation::new();
    let delete = move |_| {
        let used = if in_use { " Runs of the workflows that use it will fail." } else { "" };
        if !window().confirm_with_message(&format!("Delete the secret {}?{used}", name.get_value())).unwrap_or(false) {
            return;
        }
        deleting.settle(async move { api_secrets::delete_secret(&name.get_value()).await }, move |said| {
            on_done.run(said.map(|()| format!("Deleted {}.", name.get_value())).map_err(|e| e.message()));
        });
    };
    let used_by = secret
        .used_by
        .iter()
        .map(|w| view! { <a href=format!("/workflows/{}", w.id)>{w.name.clone()}</a> })
        .collect_view();
    view! {
        <tr data-testid="secret-row" data-name=secret.name.clone()>
            <td class="name"><code>{secret.name.clone()}</code></td>
            <td class="description">{secret.description.clone().unwrap_or_default()}</td>
            <td class="used-by">{if secret.used_by.is_empty() { view! { <span class="muted">"No workflow"</span> }.into_any() } else { used_by.into_any() }}</td>
            <td class="updated">{format::timestamp(&secret.updated_at)}</td>
            <td class="actions">
                {move || (admin.get() && !rotating.get()).then(|| view! {
                    <button type="button" on:click=move |_| rotating.set(true)>"Rotate"</button>
                    <button type="button" class="danger" on:click=delete>"Delete"</button>
                })}
                {move || rotating.get().then(|| view! { <RotateForm name=name.get_value() rotating=rotating on_done=on_done /> })}
            </td>
        </tr>
    }
}

/// A new value for one secret, typed like a password.
#[component]
fn RotateForm(name: String, rotating: RwSignal<bool>, on_done: Callback<Result<String, String>>) -> impl IntoView {
    let value = RwSignal::new(String::new());
    let label = format!("New value for {name}");
    let saving = Mutation::new();
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (name, body) = (name.clone(), UpdateSecret { value: value.get_untracked(), description: None });
        let call = {
            let name = name.clone();
            async move { api_secrets::rotate_secret(&name, &body).await }
        };
        saving.settle(call, move |said| {
            rotating.set(false);
            on_done.run(
                said.map(|_| format!("Rotated {name}: the next attempt uses the new value.")).map_err(|e| e.message()),
            );
        });
    };
    view! {
        <form class="rotate" on:submit=save>
            <input type="password" required autocomplete="new-password" aria-label=label data-testid="secret-new-value"
                prop:value=value on:input=move |ev| value.set(event_target_value(&ev)) />
            <button type="submit" class="primary">"Save"</button>
            <button type="button" on:click=move |_| rotating.set(false)>"Cancel"</button>
        </form>
    }
}
