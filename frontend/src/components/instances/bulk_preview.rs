//! A bulk action's dry run: how many instances it applies to and what it skips, with Confirm
//! (when it applies to any) and Close.

use crate::bulk::{label, preview_lines};
use leptos::prelude::*;
use trellis_model::api::BulkAnswer;
use trellis_model::JobKind;

#[component]
pub fn BulkPreview(
    action: JobKind,
    answer: BulkAnswer,
    /// No filter and no selection: the action reaches every instance.
    every: bool,
    #[prop(into)] busy: Signal<bool>,
    on_confirm: Callback<()>,
    on_close: Callback<()>,
) -> impl IntoView {
    let lines = preview_lines(action, &answer);
    let can_confirm = answer.matched > 0;
    view! {
        <div class="bulk-preview" role="dialog" aria-label="Bulk action preview" data-testid="bulk-preview">
            <h2>{format!("{} — preview", label(action))}</h2>
            {lines.into_iter().map(|l| view! { <p>{l}</p> }).collect_view()}
            {every.then(|| view! { <p class="warning">"No filter is set: this acts on every instance."</p> })}
            <div class="dialog-buttons">
                {can_confirm.then(|| view! {
                    <button type="button" class="primary" data-testid="bulk-confirm" disabled=move || busy.get()
                        on:click=move |_| on_confirm.run(())>
                        {format!("Confirm: {} {}", action.as_str(), answer.matched)}
                    </button>
                })}
                <button type="button" data-testid="bulk-dismiss" on:click=move |_| on_close.run(())>"Close"</button>
            </div>
        </div>
    }
}
