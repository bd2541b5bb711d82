//! The retry form: from the failed nodes or from the start, optionally on the workflow's latest
//! published version (`POST /instances/{id}/retry {"from","latest_version"}`).

use crate::api;
use crate::components::run::run_actions::act;
use crate::components::run::state::RunView;
use leptos::prelude::*;
use trellis_model::api::RetryRequest;

#[component]
pub fn RetryForm(open: RwSignal<bool>, busy: RwSignal<bool>) -> impl IntoView {
    let v = expect_context::<RunView>();
    let from = RwSignal::new("failed".to_owned());
    let latest = RwSignal::new(false);
    let confirm = move |_| {
        let body = RetryRequest { from: from.get_untracked(), latest_version: latest.get_untracked() };
        let id = v.id.get_value();
        act(v, busy, async move { api::retry_instance(&id, &body).await.map(drop) }, move || {
            open.set(false);
            // The instance lives again (maybe on a newer version): follow its history anew.
            v.restart();
        });
    };
    let choice = move |value: &'static str, label: &'static str| {
        view! {
            <label>
                <input type="radio" name="retry-from" value=value data-testid=format!("retry-from-{value}")
                    prop:checked=move || from.get() == value on:change=move |_| from.set(value.to_owned()) />
                " " {label}
            </label>
        }
    };
    view! {
        <form class="retry-form" data-testid="retry-form" aria-label="Retry" on:submit=|ev| ev.prevent_default()>
            <fieldset>
                <legend>"Retry"</legend>
                {choice("failed", "from the failed nodes")}
                {choice("start", "from the start")}
                <label>
                    <input type="checkbox" data-testid="retry-latest" prop:checked=move || latest.get()
                        on:change=move |ev| latest.set(event_target_checked(&ev)) />
                    " on the latest version"
                </label>
            </fieldset>
            <div class="retry-buttons">
                <button type="button" class="primary" data-testid="confirm-retry" disabled=move || busy.get() on:click=confirm>"Confirm retry"</button>
                <button type="button" data-testid="cancel-retry" on:click=move |_| open.set(false)>"Cancel"</button>
            </div>
        </form>
    }
}
