//! `/jobs`: the recent bulk jobs, newest first, with their filter, outcome and progress; running
//! ones refresh every second and can be canceled by operators.

use crate::api;
use crate::bulk::{job_finished, progress_text};
use crate::components::fetch::load as fetch;
use crate::components::mutation::Mutation;
use crate::components::table_parts::TableHead;
use crate::components::{error_alert::ErrorAlert, session::use_session};
use crate::format;
use leptos::prelude::*;
use std::time::Duration;
use trellis_model::api::Job;

const REFRESH: Duration = Duration::from_secs(1);
const COLUMNS: &[(&str, &str)] =
    &[("Action", ""), ("Filter", ""), ("Progress", ""), ("By", ""), ("Created", "updated"), ("", "")];

#[component]
pub fn JobsPage() -> impl IntoView {
    let jobs = RwSignal::new(None::<Vec<Job>>);
    let error = RwSignal::new(None::<String>);
    let can_cancel = use_session().may_act();
    let load = move || fetch(api::list_jobs(), move |page| jobs.set(Some(page.items)));
    load();
    let timer = set_interval_with_handle(
        move || {
            if jobs.with_untracked(|j| j.as_ref().is_some_and(|j| j.iter().any(|j| !job_finished(j)))) {
                load();
            }
        },
        REFRESH,
    )
    .ok();
    on_cleanup(move || {
        if let Some(t) = timer {
            t.clear();
        }
    });
    let cancelling = Mutation::reporting_to(error);
    let cancel = move |id: String| cancelling.run(async move { api::cancel_job(&id).await }, move |_| load());

    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Jobs"</h1></div>
            <ErrorAlert message=error />
            <table class="workflows jobs" data-testid="jobs-table">
                <TableHead columns=COLUMNS />
                <tbody>
                    <For
                        each=move || jobs.get().unwrap_or_default()
                        key=|j| (j.id.clone(), j.status, j.processed)
                        children=move |j: Job| {
                            let running = !job_finished(&j);
                            let id = j.id.clone();
                            view! {
                                <tr data-testid="job-row" data-status=j.status.as_str()>
                                    <td class="name">{j.kind.as_str()}</td>
                                    <td class="filter"><code>{j.filter.to_string()}</code></td>
                                    <td>
                                        <progress max=j.matched.max(1) value=j.processed></progress>
                                        " " {progress_text(&j)}
                                    </td>
                                    <td>{j.created_by.clone()}</td>
                                    <td class="updated">{format::timestamp(&j.created_at)}</td>
                                    <td>
                                        {(running && can_cancel.get()).then(|| view! {
                                            <button type="button" class="danger" on:click=move |_| cancel(id.clone())>"Cancel job"</button>
                                        })}
                                    </td>
                                </tr>
                            }
                        }
                    />
                    {move || jobs.with(|j| j.as_ref().is_some_and(Vec::is_empty)).then(|| view! {
                        <tr><td colspan="6" class="empty">"No bulk jobs yet. Start one from the Instances list."</td></tr>
                    })}
                </tbody>
            </table>
        </main>
    }
}
