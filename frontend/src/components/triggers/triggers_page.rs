//! `/workflows/{id}/triggers`: the workflow's webhooks and cron schedules — create one (a
//! webhook's URL and secret shown once, with a signed `curl` to try it; a schedule's next fire
//! times previewed as it is typed), pause and resume, rotate a secret, delete, and each one's
//! delivery log.

use super::new_trigger::NewTrigger;
use super::trigger_row::TriggerRow;
use crate::api;
use crate::api_triggers;
use crate::components::{app_header::AppHeader, error_alert::ErrorAlert, session::use_session};
use crate::run::actions::may_edit;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::Trigger;

#[component]
pub fn TriggersPage(id: String) -> impl IntoView {
    let session = use_session();
    crate::components::title::set_title("Triggers");
    let workflow = StoredValue::new(id);
    let name = RwSignal::new(String::new());
    let triggers = RwSignal::new(None::<Vec<Trigger>>);
    let error = RwSignal::new(None::<String>);
    let me = LocalResource::new(api::me);
    // Editors and admins manage triggers; the others read them and their logs.
    let editable = Signal::derive(move || me.get().and_then(Result::ok).is_some_and(|m| may_edit(m.role)));
    let reload = move || {
        spawn_local(async move {
            match api_triggers::list(&workflow.get_value()).await {
                Ok(list) => triggers.set(Some(list)),
                Err(e) => {
                    session.note(&e);
                    error.set(Some(e.message()));
                }
            }
        })
    };
    reload();
    spawn_local(async move {
        if let Ok(w) = api::get_workflow(&workflow.get_value()).await {
            crate::components::title::set_title(&format!("Triggers of {}", w.summary.name));
            name.set(w.summary.name);
        }
    });
    let changed = Callback::new(move |outcome: Result<(), String>| {
        if let Err(e) = outcome {
            error.set(Some(e));
        } else {
            error.set(None);
        }
        reload();
    });

    view! {
        <AppHeader username=session.username() />
        <main class="page wide">
            <div class="toolbar">
                <h1>"Triggers " <span class="muted">{move || name.get()}</span></h1>
                <a href=crate::urls::designer_page(&workflow.get_value())>"← Designer"</a>
            </div>
            <ErrorAlert message=error />
            <ErrorAlert message=session.error() />
            <Show when=move || editable.get()>
                <NewTrigger workflow=workflow.get_value() on_created=changed />
            </Show>
            <table class="workflows triggers" data-testid="triggers-table">
                <thead>
                    <tr>
                        <th scope="col">"Kind"</th>
                        <th scope="col">"Name"</th>
                        <th scope="col">"Where or when"</th>
                        <th scope="col">"State"</th>
                        <th scope="col"><span class="visually-hidden">"Actions"</span></th>
                    </tr>
                </thead>
                <tbody>
                    {move || match triggers.get() {
                        None => view! { <tr><td colspan="5" class="empty">"Loading…"</td></tr> }.into_any(),
                        Some(list) if list.is_empty() => view! {
                            <tr><td colspan="5" class="empty">"No triggers yet: add a webhook or a schedule above."</td></tr>
                        }.into_any(),
                        Some(list) => list.into_iter().map(|t| view! { <TriggerRow t=t on_change=changed editable=editable /> }).collect_view().into_any(),
                    }}
                </tbody>
            </table>
        </main>
    }
}
