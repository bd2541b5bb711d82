//! The bar across the top: the app name, who is signed in, and the way out.

use crate::api;
use crate::components::error_alert::ErrorAlert;
use crate::components::session::to_sign_in;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_navigate;

#[component]
pub fn AppHeader(#[prop(into)] username: Signal<Option<String>>) -> impl IntoView {
    let navigate = use_navigate();
    let error = RwSignal::new(None::<String>);

    let sign_out = move |_| {
        let navigate = navigate.clone();
        spawn_local(async move {
            match api::logout().await {
                // A 401 means the session was already gone: signed out either way.
                Err(err) if !err.is_unauthorized() => error.set(Some(err.message())),
                _ => to_sign_in(&navigate),
            }
        });
    };

    view! {
        <header class="app-header">
            <a class="brand" href="/">"Trellis"</a>
            <div class="session">
                <ErrorAlert message=error />
                <span class="username" data-testid="username">{move || username.get()}</span>
                <button type="button" on:click=sign_out>"Sign out"</button>
            </div>
        </header>
    }
}
