//! `/workflows/{id}/triggers`: the workflow's webhooks, cron schedules and broker triggers — create one (a
//! webhook's URL and secret shown once, with a signed `curl` to try it; a schedule's next fire
//! times previewed as it is typed), pause and resume, rotate a secret, delete, and each one's
//! delivery log.

use super::new_trigger::NewTrigger;
use super::trigger_row::TriggerRow;
use crate::api;
use crate::api_triggers;
use crate::components::fetch::load;
use crate::components::table_parts::{TableHead, TableRows};
use crate::components::{error_alert::ErrorAlert, session::use_session, title::set_title};
use leptos::prelude::*;
use trellis_model::api::Trigger;

const COLUMNS: &[(&str, &str)] = &[("Kind", ""), ("Name", ""), ("Where or when", ""), ("State", ""), ("", "")];

#[component]
pub fn TriggersPage(id: String) -> impl IntoView {
    let workflow = StoredValue::new(id);
    let name = RwSignal::new(String::new());
    let triggers = RwSignal::new(None::<Vec<Trigger>>);
    let error = RwSignal::new(None::<String>);
    // Editors and admins manage triggers; the others read them and their logs.
    let editable = use_session().may_edit();
    let id = move || workflow.get_value();
    let reload = move || load(async move { api_triggers::list(&id()).await }, move |list| triggers.set(Some(list)));
    reload();
    // What a trigger starts: the published version, whose input schema shapes the test body.
    let schema = RwSignal::new(None::<serde_json::Value>);
    load(async move { api::get_workflow(&id()).await }, move |w| {
        set_title(&format!("Triggers of {}", w.summary.name));
        if let Some(n) = w.summary.latest_version {
            load(async move { api::get_version(&id(), n).await }, move |v| {
                schema.set(v.definition.settings.input_schema)
            });
        }
        name.set(w.summary.name);
    });
    let changed = Callback::new(move |outcome: Result<(), String>| {
        error.set(outcome.err());
        reload();
    });

    view! {
        <main class="page wide">
            <div class="toolbar">
                <h1>"Triggers " <span class="muted">{move || name.get()}</span></h1>
                <a href=crate::urls::designer_page(&workflow.get_value())>"← Designer"</a>
            </div>
            <ErrorAlert message=error />
            <Show when=move || editable.get()>
                <NewTrigger workflow=workflow.get_value() schema=schema on_created=changed />
            </Show>
            <table class="workflows triggers" data-testid="triggers-table">
                <TableHead columns=COLUMNS />
                <TableRows rows=triggers columns=5 row=move |t| view! { <TriggerRow t=t on_change=changed editable=editable /> }
                    empty="No triggers yet: add a webhook, a schedule or a broker trigger above." />
            </table>
        </main>
    }
}
