//! Adding a secret: its name (as templates will reference it), its value (typed like a
//! password, never echoed back) and what it is for.

use crate::api_secrets;
use crate::components::mutation::Mutation;
use leptos::prelude::*;
use trellis_model::api::CreateSecret;

/// What the server accepts as a name; checked here too, so a typo is told before sending.
pub const NAME_PATTERN: &str = "[A-Za-z_][A-Za-z0-9_]{0,63}";
const NAME_RULE: &str = "A letter or _, then letters, digits or _ (64 at most), e.g. GITHUB_TOKEN";

#[component]
pub fn SecretForm(on_done: Callback<Result<String, String>>) -> impl IntoView {
    let (name, value, description) =
        (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()));
    let adding = Mutation::new();
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = description.get_untracked();
        let body = CreateSecret {
            name: name.get_untracked(),
            value: value.get_untracked(),
            description: (!text.trim().is_empty()).then_some(text),
        };
        adding.settle(async move { api_secrets::create_secret(&body).await }, move |said| {
            if said.is_ok() {
                name.set(String::new());
                value.set(String::new());
                description.set(String::new());
            }
            // The value is gone from the page either way once sent.
            on_done.run(said.map(|s| format!("Added {}.", s.name)).map_err(|e| e.message()));
        });
    };
    view! {
        <form class="inline-form" aria-label="Add a secret" on:submit=add>
            <label>"Name " <input required pattern=NAME_PATTERN title=NAME_RULE spellcheck="false" autocomplete="off"
                data-testid="secret-name" prop:value=name on:input=move |ev| name.set(event_target_value(&ev)) /></label>
            <label>"Value " <input type="password" required autocomplete="new-password" data-testid="secret-value"
                prop:value=value on:input=move |ev| value.set(event_target_value(&ev)) /></label>
            <label>"Description " <input data-testid="secret-description" prop:value=description
                on:input=move |ev| description.set(event_target_value(&ev)) /></label>
            <button type="submit" class="primary">"Add secret"</button>
        </form>
    }
}
