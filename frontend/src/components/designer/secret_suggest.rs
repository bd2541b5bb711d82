//! Secret names offered under a template field while `{{ secret.` is typed: a short list of
//! buttons; picking one writes the name and closes the template. The names come once per
//! designer from `GET /secrets` (editors and admins; for others the list is empty).

use crate::api_secrets;
use crate::designer::secret_names::{partial_name, suggestions};
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The secret names the designer knows, provided by the designer page.
#[derive(Clone, Copy)]
pub struct SecretNames(pub RwSignal<Vec<String>>);

impl SecretNames {
    /// Reads the names in the background; a refusal (a viewer) leaves none to suggest.
    pub fn load() -> Self {
        let names = RwSignal::new(Vec::new());
        spawn_local(async move {
            if let Ok(list) = api_secrets::list_secrets().await {
                names.try_set(list.into_iter().map(|s| s.name).collect());
            }
        });
        SecretNames(names)
    }
}

/// What a field holds and where its caret is (a byte offset), as the field last saw them.
pub type Typing = RwSignal<Option<(String, usize)>>;

#[component]
pub fn SecretSuggestions(
    typing: Typing,
    /// Called with the chosen name, the start of the part typed, and the caret.
    on_pick: Callback<(String, usize, usize)>,
) -> impl IntoView {
    let Some(SecretNames(names)) = use_context::<SecretNames>() else { return ().into_any() };
    let offered = move || {
        let (text, caret) = typing.get()?;
        let (start, typed) = partial_name(&text, caret)?;
        let fitting: Vec<String> = names.with(|all| suggestions(all, typed).into_iter().map(str::to_owned).collect());
        Some((fitting, start, caret, typed.to_owned()))
    };
    view! {
        {move || offered().map(|(fitting, start, caret, typed)| {
            if fitting.is_empty() {
                let why = if typed.is_empty() { "No secrets yet: ".to_owned() } else { format!("No secret starts with {typed}: ") };
                return view! { <p class="hint">{why}<a href="/secrets">"add one on the Secrets page"</a></p> }.into_any();
            }
            view! {
                <ul class="suggestions" role="list" aria-label="Secret names" data-testid="secret-suggestions">
                    {fitting.into_iter().map(|name| {
                        let pick = name.clone();
                        view! { <li><button type="button" on:click=move |_| on_pick.run((pick.clone(), start, caret))>{name}</button></li> }
                    }).collect_view()}
                </ul>
            }.into_any()
        })}
    }
    .into_any()
}
