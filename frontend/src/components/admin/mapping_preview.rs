//! "Which role would these groups get?": the single sign-on group → role mapping explained,
//! on the Users page when a provider is configured. Paste a user's groups, or pick a user to
//! use theirs; the answer names the rule that gives the role, or why such a user is refused.

use crate::api;
use crate::api_admin;
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use leptos::prelude::*;
use trellis_model::api::{MappingPreview, MappingPreviewRequest};

#[component]
pub fn MappingPreviewPanel() -> impl IntoView {
    let providers = LocalResource::new(api::providers);
    let configured = move || providers.get().and_then(Result::ok).is_some_and(|p| p.oidc.is_some());
    let groups = RwSignal::new(String::new());
    let answer = RwSignal::new(None::<MappingPreview>);
    let error = RwSignal::new(None::<String>);
    let users = LocalResource::new(api_admin::list_users);
    let explaining = Mutation::reporting_to(error);
    let explain = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = MappingPreviewRequest {
            groups: groups
                .get_untracked()
                .split(',')
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .map(str::to_owned)
                .collect(),
        };
        explaining.run(async move { api_admin::preview_mapping(&body).await }, move |said| answer.set(Some(said)));
    };
    let pick = move |ev: leptos::ev::Event| {
        let name = event_target_value(&ev);
        let list = users.get().and_then(Result::ok).unwrap_or_default();
        if let Some(user) = list.into_iter().find(|u| u.username == name) {
            groups.set(user.groups.join(", "));
        }
    };
    let user_options = move || {
        users
            .get()
            .and_then(Result::ok)
            .unwrap_or_default()
            .into_iter()
            .map(|u| {
                let value = u.username.clone();
                view! { <option value=value>{u.username}</option> }
            })
            .collect_view()
    };

    view! {
        <Show when=configured>
            <section class="card mapping-preview" aria-labelledby="mapping-heading">
                <h2 id="mapping-heading">"Single sign-on: which role do groups get?"</h2>
                <form class="inline-form" on:submit=explain>
                    <label>"Groups "
                        <input data-testid="mapping-groups" placeholder="ops, /trellis-admins" size="40"
                            prop:value=groups on:input=move |ev| groups.set(event_target_value(&ev)) />
                    </label>
                    <label>"or a user's "
                        <select data-testid="mapping-user" on:change=pick>
                            <option value="">"—"</option>
                            {user_options}
                        </select>
                    </label>
                    <button type="submit">"Explain"</button>
                </form>
                <ErrorAlert message=error />
                {move || answer.get().map(|a| {
                    let role = a.role.map_or_else(|| "refused".to_owned(), |r| r.to_string());
                    view! {
                        <p role="status" data-testid="mapping-answer">
                            <strong>{role}</strong>": "{a.explanation}
                        </p>
                    }
                })}
            </section>
        </Show>
    }
}
