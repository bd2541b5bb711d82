//! Retry, Cancel or Purge the selected rows, or every instance the list's filter shows when
//! none is selected: a dry run first, whose preview says how many the action applies to and
//! what it skips, then Confirm starts the job. Offered to operators and above only.

use super::bulk_buttons::BulkButtons;
use super::bulk_preview::BulkPreview;
use super::job_progress::JobProgress;
use crate::api;
use crate::bulk::request;
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
    let confirm = move |_: ()| {
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
            <BulkButtons scope=Signal::derive(scope) selected=selected busy=busy only=only on_ask=Callback::new(ask) />
            <ErrorAlert message=error />
            {move || preview.get().map(|(action, answer)| view! {
                <BulkPreview action=action answer=answer every=every() busy=busy
                    on_confirm=Callback::new(confirm) on_close=Callback::new(move |_| preview.set(None)) />
            })}
        </Show>
        {move || job.get().map(|id| view! { <JobProgress id=id on_dismiss=on_job on_done=on_done /> })}
    }
}
