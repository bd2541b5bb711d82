//! The Alerts page: the form to add a rule, the rules with their tests and delivery logs, and
//! what the last action did or why the API refused it. Editors and admins manage alerts; anyone
//! else is told so, without a request the API would refuse.

use super::alert_form::AlertForm;
use super::alert_row::{AlertRow, COLUMNS};
use crate::api_alerts;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::{load, Loading};
use crate::components::outcome::Outcome;
use crate::components::session::use_session;
use crate::components::table_parts::TableHead;
use leptos::prelude::*;
use trellis_model::api::AlertRule;

const HEADINGS: &[(&str, &str)] =
    &[("Name", ""), ("When", ""), ("Workflow", ""), ("Send to", ""), ("Added", "updated"), ("", "")];

#[component]
pub fn AlertsPage() -> impl IntoView {
    let may_edit = use_session().may_edit();
    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Alerts"</h1></div>
            <p class="muted">
                "Be told when an instance fails, times out or runs slow, or a queue grows: a signed POST to a \
                 webhook (Slack-compatible), retried with backoff, each try in the rule's delivery log."
            </p>
            <Show when=move || may_edit.get()
                fallback=|| view! { <p class="notice" data-testid="alerts-not-allowed">"Alerts are managed by editors and admins."</p> }>
                <Rules />
            </Show>
        </main>
    }
}

#[component]
fn Rules() -> impl IntoView {
    let rules = RwSignal::new(None::<Vec<AlertRule>>);
    let outcome = Outcome::new();
    let (error, notice) = (outcome.error, outcome.notice);
    let reload = move || load(api_alerts::list(), move |list| rules.set(Some(list)));
    reload();
    let on_done = Callback::new(move |said: Result<String, String>| {
        outcome.show(said);
        reload();
    });
    view! {
        <ErrorAlert message=error />
        {move || notice.get().map(|n| view! { <p class="notice" role="status" data-testid="alerts-notice">{n}</p> })}
        <AlertForm on_done=on_done />
        <table class="workflows alerts" data-testid="alerts-table">
            <TableHead columns=HEADINGS />
            <tbody>{move || rows(rules.get(), on_done)}</tbody>
        </table>
    }
}

fn rows(list: Option<Vec<AlertRule>>, on_done: Callback<Result<String, String>>) -> AnyView {
    match list {
        None => view! { <tr><td colspan=COLUMNS.to_string() class="empty"><Loading /></td></tr> }.into_any(),
        Some(list) if list.is_empty() => view! {
            <tr><td colspan=COLUMNS.to_string() class="empty" data-testid="alerts-empty">"No alerts yet: add one above."</td></tr>
        }
        .into_any(),
        Some(list) => {
            list.into_iter().map(|rule| view! { <AlertRow rule=rule on_done=on_done /> }).collect_view().into_any()
        }
    }
}
