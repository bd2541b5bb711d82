//! "Run again with this input…": the run form of the instance's workflow (its latest published
//! version), prefilled with this instance's input; the new instance opens when started.

use crate::components::run::state::RunView;
use crate::components::run_input::RunInput;
use crate::urls;
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

#[component]
pub fn RunAgain() -> impl IntoView {
    let v = expect_context::<RunView>();
    let may = v.session.may_act();
    let open = RwSignal::new(false);
    let navigate = use_navigate();
    let on_started = Callback::new(move |id: String| {
        open.set(false);
        navigate(&urls::instance_page(&id), Default::default());
    });
    let panel = move || {
        // `open` first: the closure must track it even while the detail is still loading.
        if !open.get() {
            return None;
        }
        let detail = v.detail.get_untracked()?;
        Some({
            view! {
                <section class="run run-again" aria-label="Run again" data-testid="run-again-panel">
                    <h2>"Run again"</h2>
                    <p class="hint">"Starts the latest published version with this input; change what you need."</p>
                    <RunInput workflow=detail.summary.workflow_id input=detail.input on_started=on_started />
                </section>
            }
        })
    };
    view! {
        {move || may.get().then(|| view! {
            <button type="button" data-testid="run-again" aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)>"Run again with this input…"</button>
        })}
        {panel}
    }
}
