//! The sign-in form. Success leaves an HttpOnly session cookie behind and opens the page that
//! sent the app here (`?next=`), or the dashboard.

use crate::api;
use crate::components::error_alert::ErrorAlert;
use crate::components::title::set_title;
use crate::shell::after_sign_in;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_query_map};
use trellis_model::api::LoginRequest;

#[component]
pub fn LoginPage() -> impl IntoView {
    set_title("Sign in");
    let navigate = use_navigate();
    let query = use_query_map();
    let username = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        let credentials = LoginRequest { username: username.get_untracked(), password: password.get_untracked() };
        pending.set(true);
        error.set(None);
        let navigate = navigate.clone();
        let next = after_sign_in(query.with_untracked(|q| q.get("next")).as_deref());
        spawn_local(async move {
            let result = api::login(&credentials).await;
            pending.set(false);
            match result {
                Ok(_) => navigate(&next, Default::default()),
                Err(err) => {
                    // Keep the username; a wrong password is the usual mistake.
                    password.set(String::new());
                    error.set(Some(err.message()));
                }
            }
        });
    };

    view! {
        <main class="page narrow">
            <h1 class="brand">"Trellis"</h1>
            <form class="card login" on:submit=on_submit>
                <h2>"Sign in"</h2>
                {credential("Username", "username", None, "username", username)}
                {credential("Password", "password", Some("password"), "current-password", password)}
                <ErrorAlert message=error />
                <button type="submit" class="primary" disabled=move || pending.get()>
                    "Sign in"
                </button>
            </form>
        </main>
    }
}

/// One labelled, required field of the form, holding what is typed in `value`.
fn credential(
    label: &'static str,
    name: &'static str,
    kind: Option<&'static str>,
    autocomplete: &'static str,
    value: RwSignal<String>,
) -> impl IntoView {
    view! {
        <label>
            {label}
            <input
                name=name
                type=kind
                autocomplete=autocomplete
                required
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
            />
        </label>
    }
}
