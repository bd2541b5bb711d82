//! Starting an instance of the latest published version, with the form its `input_schema`
//! describes (or JSON), then opening it.

use crate::components::designer::state::Designer;
use crate::components::run_input::RunInput;
use crate::urls;
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

#[component]
pub fn RunPanel() -> impl IntoView {
    let d = expect_context::<Designer>();
    let navigate = use_navigate();
    let on_started = Callback::new(move |id: String| navigate(&urls::instance_page(&id), Default::default()));
    view! {
        <section class="run" aria-label="Run">
            <h2>"Run"</h2>
            <p class="hint">"Starts the latest published version. Publish your changes first."</p>
            <RunInput workflow=d.id() on_started=on_started />
        </section>
    }
}
