//! The bulk bar's buttons: what the action applies to, "Clear selection" while rows are picked,
//! one button per action, each asking for a dry run first, and "Compare" when two rows are picked.

use crate::bulk::{label, ACTIONS};
use leptos::prelude::*;
use trellis_model::JobKind;

#[component]
pub fn BulkButtons(
    /// What the actions apply to, as the start of a sentence.
    scope: Signal<String>,
    selected: RwSignal<Vec<String>>,
    #[prop(into)] busy: Signal<bool>,
    /// Offer only this action.
    only: Option<JobKind>,
    on_ask: Callback<JobKind>,
) -> impl IntoView {
    let picked = move || selected.with(Vec::len);
    view! {
        <div class="bulk-bar" role="group" aria-label="Act on every instance shown">
            <span class="muted" data-testid="bulk-scope">{scope}</span>
            <Show when=move || picked() != 0>
                <button type="button" class="link" data-testid="bulk-clear-selection" on:click=move |_| selected.set(Vec::new())>
                    "Clear selection"
                </button>
            </Show>
            // Two rows picked: open them side by side (the first picked is A).
            {move || selected.with(|s| match s.as_slice() {
                [a, b] => Some(view! {
                    <a class="button-link" data-testid="bulk-compare" href=crate::compare::page(a, b)>"Compare"</a>
                }),
                _ => None,
            })}
            {ACTIONS.iter().filter(|a| only.is_none_or(|o| o == **a)).map(|action| {
                let action = *action;
                view! {
                    <button
                        type="button"
                        class=if action == JobKind::Retry { "" } else { "danger" }
                        data-testid=format!("bulk-{}", action.as_str())
                        disabled=move || busy.get()
                        on:click=move |_| on_ask.run(action)
                    >
                        {move || format!("{} {}…", label(action), if picked() == 0 { "all" } else { "selected" })}
                    </button>
                }
            }).collect_view()}
        </div>
    }
}
