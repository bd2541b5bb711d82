//! Retry, Cancel or Purge the selected rows, or every instance the list's filter shows when
//! none is selected: a dry run first, whose preview says how many the action applies to and
//! what it skips, then Confirm starts the job. Offered to operators and above only.

use super::bulk_buttons::BulkButtons;
use super::bulk_preview::BulkPreview;
use super::job_progress::JobProgress;
use crate::api;
use crate::bulk::request;
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;
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
    // The dry run and the real one share a pending state and an error view.
    let bulk = Mutation::new();
    let busy = bulk.pending();

    let ask = move |action: JobKind| {
        let body = request(&filter.get_untracked(), &selected.get_untracked(), true);
        bulk.run(async move { api::bulk(action.as_str(), &body).await }, move |answer| {
            preview.set(Some((action, answer)));
        });
    };
    let confirm = move |_: ()| {
        let Some((action, _)) = preview.get_untracked() else { return };
        let body = request(&filter.get_untracked(), &selected.get_untracked(), false);
        bulk.run(async move { api::bulk(action.as_str(), &body).await }, move |answer| {
            preview.set(None);
            selected.set(Vec::new());
            on_job.run(answer.job_id);
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
            <BulkButtons scope=Signal::derive(scope) selected=selected busy=busy only=only on_ask=Callback::new(ask) />
            <ErrorAlert message=bulk.error() />
            {move || preview.get().map(|(action, answer)| view! {
                <BulkPreview action=action answer=answer every=every() busy=busy
                    on_confirm=Callback::new(confirm) on_close=Callback::new(move |_| preview.set(None)) />
            })}
        </Show>
        {move || job.get().map(|id| view! { <JobProgress id=id on_dismiss=on_job on_done=on_done /> })}
    }
}
