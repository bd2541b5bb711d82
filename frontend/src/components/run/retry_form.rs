//! The retry form, shown with its preview: from the failed nodes, from the start, or from a node
//! picked on the graph, optionally on the workflow's latest published version
//! (`POST /instances/{id}/retry {"from","latest_version"}`). While it is open the graph outlines
//! the nodes that would run again; "Confirm retry" sends it, "Cancel" closes it.

use crate::api;
use crate::components::mutation::Mutation;
use crate::components::run::retry_summary::RetrySummary;
use crate::components::run::run_actions::act;
use crate::components::run::state::RunView;
use crate::error::ApiError;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::RetryRequest;
use trellis_model::Definition;

/// The workflow's latest published version and its graph; `None` when it is the instance's own.
async fn latest_version(v: RunView) -> Result<Option<(i64, Definition)>, ApiError> {
    let Some((workflow, current)) =
        v.detail.with_untracked(|d| d.as_ref().map(|d| (d.summary.workflow_id.clone(), d.summary.version)))
    else {
        return Ok(None);
    };
    let Some(latest) = api::get_workflow(&workflow).await?.summary.latest_version.filter(|n| *n != current) else {
        return Ok(None);
    };
    Ok(Some((latest, api::get_version(&workflow, latest).await?.definition)))
}

#[component]
pub fn RetryForm(busy: Mutation) -> impl IntoView {
    let v = expect_context::<RunView>();
    let latest = RwSignal::new(false);
    let from = move || v.retry.get().unwrap_or_default();
    let on_latest = move |ticked: bool| {
        latest.set(ticked);
        v.retry_onto.set(None);
        if ticked {
            spawn_local(async move {
                match latest_version(v).await {
                    // Still wanted: the box may have been cleared while this was read.
                    Ok(onto) if latest.get_untracked() => v.retry_onto.set(onto),
                    Ok(_) => {}
                    Err(err) => v.error.set(Some(err.message())),
                }
            });
        }
    };
    on_cleanup(move || v.retry_onto.set(None));
    let confirm = move |_| {
        let Some(from) = v.retry.get_untracked() else { return };
        let body = RetryRequest { from, latest_version: latest.get_untracked() };
        let id = v.id.get_value();
        act(v, busy, async move { api::retry_instance(&id, &body).await.map(drop) }, move || {
            // The instance lives again (maybe on a newer version): follow its history anew.
            v.restart();
        });
    };
    let choice = move |value: String, label: String| {
        let test_id = if matches!(value.as_str(), "failed" | "start") { value.clone() } else { "node".into() };
        let checked = value.clone();
        view! {
            <label>
                <input type="radio" name="retry-from" data-testid=format!("retry-from-{test_id}")
                    prop:checked=move || from() == checked on:change=move |_| v.retry.set(Some(value.clone())) />
                " " {label}
            </label>
        }
    };
    let count = move || v.rerun.with(|r| r.len());
    view! {
        <form class="retry-form" data-testid="retry-form" aria-label="Retry" on:submit=|ev| ev.prevent_default()>
            <fieldset>
                <legend>"Retry"</legend>
                {choice("failed".into(), "from the failed nodes".into())}
                {choice("start".into(), "from the start".into())}
                {move || v.picked.get().map(|node| choice(node.clone(), format!("from node {node}")))}
                <label>
                    <input type="checkbox" data-testid="retry-latest" prop:checked=move || latest.get()
                        on:change=move |ev| on_latest(event_target_checked(&ev)) />
                    " on the latest version"
                </label>
            </fieldset>
            <RetrySummary count=Signal::derive(count) />
            <div class="retry-buttons">
                <button type="button" class="primary" data-testid="confirm-retry" disabled=move || busy.pending().get() || (count() == 0 && !latest.get())
                    on:click=confirm>"Confirm retry"</button>
                <button type="button" data-testid="cancel-retry" on:click=move |_| v.retry.set(None)>"Cancel"</button>
            </div>
        </form>
    }
}
