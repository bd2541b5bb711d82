//! The API keys on the Users page: create one (its secret shown this once, with a Copy button
//! and a ready `curl`), list the live ones, revoke.

use super::api_key_form::KeyForm;
use super::api_keys_table::KeysTable;
use crate::api_admin;
use crate::components::copy_button::CopyButton;
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::{ApiKey, CreateApiKey, CreatedApiKey};

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
    // Creating and revoking share the panel's error view.
    let changing = Mutation::reporting_to(error);
    let create = move |_: ()| {
        let body = CreateApiKey { name: name.get_untracked(), role: role.get_untracked() };
        changing.run(async move { api_admin::create_api_key(&body).await }, move |key| {
            name.set(String::new());
            created.set(Some(key));
            reload();
        });
    };
    let revoke = move |(id, label): (String, String)| {
        if !window()
            .confirm_with_message(&format!("Revoke the key {label}? Callers using it stop at once."))
            .unwrap_or(false)
        {
            return;
        }
        changing.run(async move { api_admin::revoke_api_key(&id).await }, move |()| reload());
    };
    view! {
        <section class="panel api-keys" aria-labelledby="keys-title">
            <h2 id="keys-title">"API keys"</h2>
            <ErrorAlert message=error />
            {move || created.get().map(|k| view! { <NewKey k=k on_done=Callback::new(move |_| created.set(None)) /> })}
            <KeyForm name=name role=role on_create=Callback::new(create) />
            <KeysTable keys=keys on_revoke=Callback::new(revoke) />
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
