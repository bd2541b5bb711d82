//! What `/instances/:id` shows when the server knows no instance by that id (a mistyped link, a
//! run removed by retention): saying so, with the way to the list, rather than an empty run.

use crate::components::title::set_title;
use leptos::prelude::*;

#[component]
pub fn NoSuchInstance(id: String) -> impl IntoView {
    set_title("No such instance");
    view! {
        <main class="page narrow no-such-instance" data-testid="no-such-instance">
            <h1>"No such instance"</h1>
            <p>"There is no instance with the id " <code class="clip" title=id.clone()>{id.clone()}</code>
                ". It may have been removed by retention, or the link is mistyped."</p>
            <p><a href="/instances">"All instances"</a></p>
        </main>
    }
}
