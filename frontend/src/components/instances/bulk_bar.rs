//! Retry, Cancel or Purge the selected rows, or every instance the list's filter shows when
//! none is selected: a dry run first, whose preview says how many the action applies to and
//! what it skips, then Confirm starts the job. Offered to operators and above only.

use super::job_progress::JobProgress;
use crate::api;
use crate::bulk::{label, preview_lines, request, ACTIONS};
use crate::components::error_alert::ErrorAlert;
use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::BulkAnswer;
use trellis_model::JobKind;

#[component]
pub fn BulkBar(
    #[prop(into)] filter: Signal<InstanceFilter>,
    /// The rows picked in the table; acting on them clears the selection.
    selected: RwSignal<Vec<String>>,
    /// Whether the signed-in user may act (operators and above).
    #[prop(into)]
    allowed: Signal<bool>,
    /// The job being followed (from the address, so it survives a reload).
    #[prop(into)]
    job: Signal<Option<String>>,
    on_job: Callback<Option<String>>,
    on_done: Callback<()>,
    /// Offer only this action (the failures page retries groups).
    #[prop(optional)]
    only: Option<JobKind>,
) -> impl IntoView {
    let preview = RwSignal::new(None::<(JobKind, BulkAnswer)>);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);

    let ask = move |action: JobKind| {
        busy.set(true);
        error.set(None);
        let body = request(&filter.get_untracked(), &selected.get_untracked(), true);
        spawn_local(async move {
            match api::bulk(action.as_str(), &body).await {
                Ok(answer) => preview.set(Some((action, answer))),
                Err(err) => error.set(Some(err.message())),
            }
            busy.set(false);
        });
    };
    let confirm = move |_| {
        let Some((action, _)) = preview.get_untracked() else { return };
        busy.set(true);
        let body = request(&filter.get_untracked(), &selected.get_untracked(), false);
        spawn_local(async move {
            match api::bulk(action.as_str(), &body).await {
                Ok(answer) => {
                    preview.set(None);
                    selected.set(Vec::new());
                    on_job.run(answer.job_id);
                }
                Err(err) => error.set(Some(err.message())),
            }
            busy.set(false);
        });
    };
    let picked = move || selected.with(Vec::len);
    let every = move || picked() == 0 && filter.with(InstanceFilter::is_empty);
    let scope = move || match picked() {
        0 if every() => "Every instance (no filter):".to_owned(),
        0 => "Every instance matching this filter:".to_owned(),
        1 => "The selected instance:".to_owned(),
        n => format!("The {n} selected instances:"),
    };

    view! {
        <Show when=move || allowed.get()>
            <div class="bulk-bar" role="group" aria-label="Act on every instance shown">
                <span class="muted" data-testid="bulk-scope">{scope}</span>
                <Show when=move || picked() != 0>
                    <button type="button" class="link" data-testid="bulk-clear-selection" on:click=move |_| selected.set(Vec::new())>
                        "Clear selection"
                    </button>
                </Show>
                {ACTIONS.iter().filter(|a| only.is_none_or(|o| o == **a)).map(|action| {
                    let action = *action;
                    view! {
                        <button
                            type="button"
                            class=if action == JobKind::Retry { "" } else { "danger" }
                            data-testid=format!("bulk-{}", action.as_str())
                            disabled=move || busy.get()
                            on:click=move |_| ask(action)
                        >
                            {move || format!("{} {}…", label(action), if picked() == 0 { "all" } else { "selected" })}
                        </button>
                    }
                }).collect_view()}
            </div>
            <ErrorAlert message=error />
            {move || preview.get().map(|(action, answer)| {
                let lines = preview_lines(action, &answer);
                let can_confirm = answer.matched > 0;
                view! {
                    <div class="bulk-preview" role="dialog" aria-label="Bulk action preview" data-testid="bulk-preview">
                        <h2>{format!("{} — preview", label(action))}</h2>
                        {lines.into_iter().map(|l| view! { <p>{l}</p> }).collect_view()}
                        {every().then(|| view! { <p class="warning">"No filter is set: this acts on every instance."</p> })}
                        <div class="dialog-buttons">
                            {can_confirm.then(|| view! {
                                <button type="button" class="primary" data-testid="bulk-confirm" disabled=move || busy.get() on:click=confirm>
                                    {format!("Confirm: {} {}", action.as_str(), answer.matched)}
                                </button>
                            })}
                            <button type="button" data-testid="bulk-dismiss" on:click=move |_| preview.set(None)>"Close"</button>
                        </div>
                    </div>
                }
            })}
        </Show>
        {move || job.get().map(|id| view! { <JobProgress id=id on_dismiss=on_job on_done=on_done /> })}
    }
}
