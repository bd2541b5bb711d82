//! The sign-in form. Success leaves an HttpOnly session cookie behind and opens the workflow list.

use crate::api;
use crate::components::error_alert::ErrorAlert;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_navigate;
use trellis_model::api::LoginRequest;

#[component]
pub fn LoginPage() -> impl IntoView {
    let navigate = use_navigate();
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
        spawn_local(async move {
            let result = api::login(&credentials).await;
            pending.set(false);
            match result {
                Ok(_) => navigate("/", Default::default()),
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
                <label>
                    "Username"
                    <input
                        name="username"
                        autocomplete="username"
                        required
                        prop:value=move || username.get()
                        on:input=move |ev| username.set(event_target_value(&ev))
                    />
                </label>
                <label>
                    "Password"
                    <input
                        name="password"
                        type="password"
                        autocomplete="current-password"
                        required
                        prop:value=move || password.get()
                        on:input=move |ev| password.set(event_target_value(&ev))
                    />
                </label>
                <ErrorAlert message=error />
                <button type="submit" class="primary" disabled=move || pending.get()>
                    "Sign in"
                </button>
            </form>
        </main>
    }
}
