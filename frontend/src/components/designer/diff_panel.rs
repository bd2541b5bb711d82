//! The list of changes between the two versions shown on the canvas.

use crate::components::designer::state::Designer;
use crate::designer::diff;
use crate::format::version_name;
use leptos::prelude::*;

#[component]
pub fn DiffPanel() -> impl IntoView {
    let d = expect_context::<Designer>();
    let lines = move || {
        d.diff.with(|data| data.as_ref().map(|x| diff::diff(&x.before, &x.after).summary()).unwrap_or_default())
    };
    let title = move || {
        d.diff.with(|x| x.as_ref().map(|x| format!("Changes from {} to {}", version_name(x.from), version_name(x.to))))
    };
    view! {
        <section class="diff-panel" aria-label="Version changes" data-testid="diff-panel">
            <div class="diff-head">
                <h2>{title}</h2>
                <button type="button" on:click=move |_| d.diff.set(None)>"Back to the draft"</button>
            </div>
            <p class="legend">
                <span class="swatch added">"added"</span>
                <span class="swatch removed">"removed"</span>
                <span class="swatch changed">"changed"</span>
            </p>
            <Show when=move || !lines().is_empty() fallback=|| view! { <p class="hint">"No changes."</p> }>
                <ul class="changes">{move || lines().into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}</ul>
            </Show>
        </section>
    }
}
