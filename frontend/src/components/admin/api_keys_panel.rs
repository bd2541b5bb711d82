//! The API keys on the Users page: create one (its secret shown this once, with a Copy button
//! and a ready `curl`), list the live ones, revoke.

use super::users_page::ROLES;
use crate::api_admin;
use crate::components::copy_button::CopyButton;
use crate::components::error_alert::ErrorAlert;
use crate::components::table_parts::TableHead;
use crate::format;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::{ApiKey, CreateApiKey, CreatedApiKey};

const COLUMNS: &[(&str, &str)] =
    &[("Name", ""), ("Key", ""), ("Role", ""), ("Created by", ""), ("Created", "updated"), ("", "")];

#[component]
pub fn ApiKeysPanel() -> impl IntoView {
    let keys = RwSignal::new(Vec::<ApiKey>::new());
    let error = RwSignal::new(None::<String>);
    let created = RwSignal::new(None::<CreatedApiKey>);
    let reload = move || {
        spawn_local(async move {
            match api_admin::list_api_keys().await {
                Ok(list) => keys.set(list),
                Err(e) => error.set(Some(e.message())),
            }
        })
    };
    reload();
    let (name, role) = (RwSignal::new(String::new()), RwSignal::new("operator".to_owned()));
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = CreateApiKey { name: name.get_untracked(), role: role.get_untracked() };
        spawn_local(async move {
            match api_admin::create_api_key(&body).await {
                Ok(key) => {
                    name.set(String::new());
                    error.set(None);
                    created.set(Some(key));
                    reload();
                }
                Err(e) => error.set(Some(e.message())),
            }
        });
    };
    let revoke = move |id: String, label: String| {
        if !window()
            .confirm_with_message(&format!("Revoke the key {label}? Callers using it stop at once."))
            .unwrap_or(false)
        {
            return;
        }
        spawn_local(async move {
            match api_admin::revoke_api_key(&id).await {
                Ok(()) => reload(),
                Err(e) => error.set(Some(e.message())),
            }
        });
    };
    view! {
        <section class="panel api-keys" aria-labelledby="keys-title">
            <h2 id="keys-title">"API keys"</h2>
            <ErrorAlert message=error />
            {move || created.get().map(|k| view! { <NewKey k=k on_done=Callback::new(move |_| created.set(None)) /> })}
            <form class="inline-form" aria-label="Create an API key" on:submit=create>
                <label>"Name " <input required data-testid="key-name" prop:value=name on:input=move |ev| name.set(event_target_value(&ev)) /></label>
                <label>"Role "
                    <select data-testid="key-role" on:change=move |ev| role.set(event_target_value(&ev))>
                        {ROLES.iter().map(|r| r.as_str()).map(|r| view! { <option value=r selected=move || role.get() == r>{r}</option> }).collect_view()}
                    </select>
                </label>
                <button type="submit" class="primary">"Create key"</button>
            </form>
            <table class="workflows" data-testid="keys-table">
                <TableHead columns=COLUMNS />
                <tbody>
                    {move || {
                        let list = keys.get();
                        if list.is_empty() {
                            return view! { <tr><td colspan="6" class="empty">"No API keys."</td></tr> }.into_any();
                        }
                        list.into_iter().map(|k| {
                            let (id, label) = (k.id.clone(), k.name.clone());
                            view! {
                                <tr data-testid="key-row">
                                    <td class="name">{k.name.clone()}</td>
                                    <td><code>{format!("{}…", k.prefix)}</code></td>
                                    <td>{k.role.as_str()}</td>
                                    <td>{k.created_by.clone().unwrap_or_default()}</td>
                                    <td class="updated">{format::timestamp(&k.created_at)}</td>
                                    <td class="actions">
                                        <button type="button" class="danger" on:click=move |_| revoke(id.clone(), label.clone())>"Revoke"</button>
                                    </td>
                                </tr>
                            }
                        }).collect_view().into_any()
                    }}
                </tbody>
            </table>
        </section>
    }
}

/// A key just created: its secret, shown this once with a Copy button and a `curl` to try it.
#[component]
fn NewKey(k: CreatedApiKey, on_done: Callback<()>) -> impl IntoView {
    let origin = window().location().origin().unwrap_or_default();
    let curl = format!("curl -H 'authorization: Bearer {}' {origin}/api/v1/auth/me", k.key);
    view! {
        <div class="secret-once" role="status" data-testid="new-key">
            <p><strong>{format!("Key {} ({}): copy it now, it is not shown again.", k.name, k.role)}</strong></p>
            <p><code data-testid="new-key-secret">{k.key.clone()}</code> " " <CopyButton text=k.key.clone() label="Copy key" /></p>
            <p class="muted">"Try it:"</p>
            <pre>{curl.clone()}</pre>
            <CopyButton text=curl label="Copy curl" />
            <button type="button" on:click=move |_| on_done.run(())>"Done"</button>
        </div>
    }
}
