//! The Limits page: what each shared limit allows and holds now, the form to make one
//! (editors), and what the last action did or why the API refused it.

use super::limit_form::LimitForm;
use super::limit_row::LimitRow;
use crate::api_limits;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::{load, Loading};
use crate::components::outcome::Outcome;
use crate::components::session::use_session;
use crate::components::table_parts::TableHead;
use leptos::prelude::*;
use trellis_model::api::SharedLimit;
use trellis_model::Role;

const COLUMNS: &[(&str, &str)] = &[("Name", ""), ("Allows", ""), ("Now", ""), ("Used by", ""), ("", "")];

#[component]
pub fn LimitsPage() -> impl IntoView {
    let limits = RwSignal::new(None::<Vec<SharedLimit>>);
    let outcome = Outcome::new();
    let (error, notice) = (outcome.error, outcome.notice);
    let reload = move || load(api_limits::list_limits(), move |list| limits.set(Some(list)));
    reload();
    let on_done = Callback::new(move |said: Result<String, String>| {
        outcome.show(said);
        reload();
    });
    let editor = Signal::derive(move || use_session().role().get().is_some_and(|role| role >= Role::Editor));
    view! {
        <main class="page wide">
            <div class="toolbar">
                <h1>"Limits"</h1>
                <button type="button" on:click=move |_| reload()>"Refresh"</button>
            </div>
            <p class="muted">
                "A shared limit holds every node that names it — in any workflow, on any server — to a number \
                 running at once and a number begun per period. Name one on an http, script, task, sub-workflow \
                 or map node (its Shared limit field). A node waiting for room counts no attempt; a call answered 429 or \
                 503 with Retry-After pauses the whole limit that long."
                {move || (!editor.get()).then_some(" Only editors make, change or delete limits.")}
            </p>
            <ErrorAlert message=error />
            {move || notice.get().map(|n| view! { <p class="notice" role="status" data-testid="limits-notice">{n}</p> })}
            {move || editor.get().then(|| view! { <LimitForm editing=None on_done=on_done /> })}
            <table class="workflows limits" data-testid="limits-table">
                <TableHead columns=COLUMNS />
                <tbody>{move || rows(limits.get(), editor, on_done)}</tbody>
            </table>
        </main>
    }
}

fn rows(list: Option<Vec<SharedLimit>>, editor: Signal<bool>, on_done: Callback<Result<String, String>>) -> AnyView {
    match list {
        None => view! { <tr><td colspan="5" class="empty"><Loading /></td></tr> }.into_any(),
        Some(list) if list.is_empty() => view! {
            <tr><td colspan="5" class="empty">"No shared limits yet. Make one to hold the calls of many workflows to one API's limits."</td></tr>
        }
        .into_any(),
        Some(list) => list
            .into_iter()
            .map(|limit| view! { <LimitRow limit=limit editor=editor on_done=on_done /> })
            .collect_view()
            .into_any(),
    }
}
