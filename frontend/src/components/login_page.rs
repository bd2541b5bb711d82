//! The sign-in page: "Sign in with <provider>" when single sign-on is configured, the password
//! form unless it is turned off, and why a sign-in through the provider was refused
//! (`?error=CODE`, set by the server's callback). Success leaves an HttpOnly session cookie
//! behind and opens the page that sent the app here (`?next=`), or the dashboard.

use crate::api;
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use crate::components::title::set_title;
use crate::shell::after_sign_in;
use crate::urls;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};
use trellis_model::api::{AuthProviders, LoginRequest};

#[component]
pub fn LoginPage() -> impl IntoView {
    set_title("Sign in");
    let navigate = use_navigate();
    let query = use_query_map();
    let username = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let sign_in = Mutation::new();
    let refused = query.with_untracked(|q| q.get("error")).map(|code| refusal_words(&code));
    let next_page = after_sign_in(query.with_untracked(|q| q.get("next")).as_deref());
    // Until the server says otherwise, the password form shows (it is the way in that needs
    // nothing else to answer).
    let providers = LocalResource::new(api::providers);
    let offered = Memo::new(move |_| {
        providers.get().and_then(Result::ok).unwrap_or(AuthProviders { password: true, oidc: None })
    });
    // Each part re-renders only when what it shows changes (not when the answer arrives the same).
    let password_offered = Memo::new(move |_| offered.get().password);
    let provider = Memo::new(move |_| offered.get().oidc);

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let credentials = LoginRequest { username: username.get_untracked(), password: password.get_untracked() };
        let navigate = navigate.clone();
        let next = after_sign_in(query.with_untracked(|q| q.get("next")).as_deref());
        sign_in.run_or(
            async move { api::login(&credentials).await },
            move |_| navigate(&next, Default::default()),
            // Keep the username; a wrong password is the usual mistake.
            move |_| password.set(String::new()),
        );
    };

    let single_sign_on = move || {
        provider.get().map(|oidc| {
            let href = urls::sso_login(&oidc.login_url, &next_page);
            let label = format!("Sign in with {}", oidc.name);
            if oidc.reachable {
                // `rel="external"`: a full page load to the server, not a route of the app.
                view! { <a class="button primary sso" href=href rel="external">{label}</a> }.into_any()
            } else {
                let why = format!("{} cannot be reached right now; try again in a moment.", oidc.name);
                view! {
                    <button type="button" class="sso" disabled>{label}</button>
                    <p class="hint" role="status">{why}</p>
                }
                .into_any()
            }
        })
    };
    let password_form = move || {
        password_offered.get().then(|| {
            view! {
                {credential("Username", "username", None, "username", username)}
                {credential("Password", "password", Some("password"), "current-password", password)}
                <ErrorAlert message=sign_in.error() />
                <button type="submit" class="primary" disabled=sign_in.pending()>
                    "Sign in"
                </button>
            }
        })
    };
    let either = move || provider.get().is_some() && password_offered.get();

    view! {
        <main class="page narrow">
            <h1 class="brand">"Trellis"</h1>
            <form class="card login" on:submit=on_submit>
                <h2>"Sign in"</h2>
                {refused.map(|words| view! { <p class="error" role="alert">{words}</p> })}
                {single_sign_on}
                <Show when=either>
                    <p class="divider">"or with a password"</p>
                </Show>
                {password_form}
            </form>
        </main>
    }
}

/// What the sign-in page says about a single sign-on refusal (`?error=CODE`); the reason in
/// full is in the audit log.
pub fn refusal_words(code: &str) -> String {
    trellis_model::api::sso_refusal_words(code).to_owned()
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
