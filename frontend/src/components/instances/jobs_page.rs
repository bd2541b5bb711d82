//! `/jobs`: the recent bulk jobs, newest first, with their filter, outcome and progress; running
//! ones refresh every second and can be canceled by operators.

use crate::api;
use crate::bulk::{job_finished, progress_text};
use crate::components::{app_header::AppHeader, error_alert::ErrorAlert, session::use_session};
use crate::format;
use crate::run::actions::may_act;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::time::Duration;
use trellis_model::api::Job;

const REFRESH: Duration = Duration::from_secs(1);

#[component]
pub fn JobsPage() -> impl IntoView {
    let session = use_session();
    crate::components::title::set_title("Jobs");
    let jobs = RwSignal::new(None::<Vec<Job>>);
    let error = RwSignal::new(None::<String>);
    let me = LocalResource::new(api::me);
    let can_cancel = move || me.get().and_then(Result::ok).is_some_and(|m| may_act(m.role));
    let load = move || {
        spawn_local(async move {
            match api::list_jobs().await {
                Ok(page) => jobs.set(Some(page.items)),
                Err(err) => {
                    session.note(&err);
                    error.set(Some(err.message()));
                }
            }
        })
    };
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
    let cancel = move |id: String| {
        spawn_local(async move {
            match api::cancel_job(&id).await {
                Ok(_) => load(),
                Err(err) => error.set(Some(err.message())),
            }
        })
    };

    view! {
        <AppHeader username=session.username() />
        <main class="page wide">
            <div class="toolbar"><h1>"Jobs"</h1></div>
            <ErrorAlert message=error />
            <table class="workflows jobs" data-testid="jobs-table">
                <thead>
                    <tr>
                        <th scope="col">"Action"</th>
                        <th scope="col">"Filter"</th>
                        <th scope="col">"Progress"</th>
                        <th scope="col">"By"</th>
                        <th scope="col" class="updated">"Created"</th>
                        <th scope="col"><span class="visually-hidden">"Actions"</span></th>
                    </tr>
                </thead>
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
                                        {(running && can_cancel()).then(|| view! {
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
