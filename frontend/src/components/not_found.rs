//! Shown for any in-app address no page handles.

use leptos::prelude::*;

#[component]
pub fn NotFound() -> impl IntoView {
    crate::components::title::set_title("Page not found");
    view! {
        <main class="page narrow">
            <h1>"Page not found"</h1>
            <p><a href="/workflows">"Back to workflows"</a></p>
        </main>
    }
}
