//! A bulk job's progress as a bar (processed / matched, failures), polled until the job ends;
//! a running job can be canceled.

use crate::api;
use crate::bulk::{job_finished, progress_text};
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::time::Duration;
use trellis_model::api::Job;

const POLL: Duration = Duration::from_millis(500);

#[component]
pub fn JobProgress(id: String, on_dismiss: Callback<Option<String>>, on_done: Callback<()>) -> impl IntoView {
    let job = RwSignal::new(None::<Job>);
    let error = RwSignal::new(None::<String>);
    let id = StoredValue::new(id);
    let read = move || {
        spawn_local(async move {
            match api::get_job(&id.get_value()).await {
                Ok(j) => {
                    let ended = job_finished(&j);
                    let was_running = job.with_untracked(|old| old.as_ref().is_none_or(|o| !job_finished(o)));
                    job.set(Some(j));
                    if ended && was_running {
                        on_done.run(());
                    }
                }
                Err(err) => error.set(Some(err.message())),
            }
        });
    };
    read();
    let timer = set_interval_with_handle(
        move || {
            if job.with_untracked(|j| j.as_ref().is_none_or(|j| !job_finished(j))) && error.get_untracked().is_none() {
                read();
            }
        },
        POLL,
    )
    .ok();
    on_cleanup(move || {
        if let Some(t) = timer {
            t.clear();
        }
    });
    // Settled here, not through the mutation's error: the polling stops while `error` is set.
    let cancelling = Mutation::new();
    let cancel = move |_| {
        cancelling.settle(async move { api::cancel_job(&id.get_value()).await }, move |said| match said {
            Ok(j) => job.set(Some(j)),
            Err(err) => error.set(Some(err.message())),
        });
    };
    let running = move || job.with(|j| j.as_ref().is_some_and(|j| !job_finished(j)));

    view! {
        <div class="job-progress" data-testid="job-progress" data-status=move || job.with(|j| j.as_ref().map(|j| j.status.as_str()))>
            <ErrorAlert message=error />
            {move || job.get().map(|j| view! {
                <progress max=j.matched.max(1) value=j.processed aria-label="Job progress"></progress>
                <span data-testid="job-progress-text">{progress_text(&j)}</span>
            })}
            <Show when=running>
                <button type="button" class="danger" on:click=cancel>"Cancel job"</button>
            </Show>
            <a href="/jobs">"All jobs"</a>
            <Show when=move || !running()>
                <button type="button" on:click=move |_| on_dismiss.run(None)>"Dismiss"</button>
            </Show>
        </div>
    }
}
