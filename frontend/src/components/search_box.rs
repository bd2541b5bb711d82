//! The search field above the workflow list. Searching changes the address (`/?q=`), so a search
//! survives reloads and the back button; the list page reacts to the address.

use crate::urls;
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

#[component]
pub fn SearchBox(#[prop(into)] search: Signal<String>) -> impl IntoView {
    let navigate = use_navigate();
    let text = RwSignal::new(search.get_untracked());
    // Follow the address when it changes underneath us (back button, a link).
    Effect::new(move |_| text.set(search.get()));

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        navigate(&urls::list_page(&text.get_untracked()), Default::default());
    };

    view! {
        <form class="search" role="search" on:submit=on_submit>
            <input
                type="search"
                name="q"
                placeholder="Search workflows"
                aria-label="Search workflows"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
            />
            <button type="submit">"Search"</button>
        </form>
    }
}
