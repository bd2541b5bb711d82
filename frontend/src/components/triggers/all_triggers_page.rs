//! `/triggers`: every workflow's webhooks and schedules in one list; each opens its workflow's
//! triggers page, where they are managed and their deliveries read.

use super::trigger_row::where_or_when;
use crate::api_triggers;
use crate::components::{app_header::AppHeader, error_alert::ErrorAlert, session::use_session};
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::Trigger;

#[component]
pub fn AllTriggersPage() -> impl IntoView {
    let session = use_session();
    crate::components::title::set_title("Triggers");
    let triggers = RwSignal::new(None::<Vec<Trigger>>);
    let error = RwSignal::new(None::<String>);
    spawn_local(async move {
        match api_triggers::list_all().await {
            Ok(list) => triggers.set(Some(list)),
            Err(e) => {
                session.note(&e);
                error.set(Some(e.message()));
            }
        }
    });
    view! {
        <AppHeader username=session.username() />
        <main class="page wide">
            <div class="toolbar"><h1>"Triggers"</h1></div>
            <ErrorAlert message=error />
            <ErrorAlert message=session.error() />
            <table class="workflows triggers" data-testid="all-triggers">
                <thead>
                    <tr>
                        <th scope="col">"Workflow"</th>
                        <th scope="col">"Kind"</th>
                        <th scope="col">"Name"</th>
                        <th scope="col">"Where or when"</th>
                        <th scope="col">"State"</th>
                    </tr>
                </thead>
                <tbody>
                    {move || match triggers.get() {
                        None => view! { <tr><td colspan="5" class="empty">"Loading…"</td></tr> }.into_any(),
                        Some(list) if list.is_empty() => view! {
                            <tr><td colspan="5" class="empty">"No triggers yet: a workflow's designer has a Triggers link to add one."</td></tr>
                        }.into_any(),
                        Some(list) => list.into_iter().map(|t| view! { <Row t=t /> }).collect_view().into_any(),
                    }}
                </tbody>
            </table>
        </main>
    }
}

#[component]
fn Row(t: Trigger) -> impl IntoView {
    let href = format!("{}/triggers", crate::urls::designer_page(&t.workflow_id));
    let workflow = t.workflow_name.clone().unwrap_or_else(|| t.workflow_id.clone());
    let what = where_or_when(&t);
    view! {
        <tr data-testid="any-trigger-row">
            <td class="name"><a href=href>{workflow}</a></td>
            <td>{t.kind.as_str()}</td>
            <td>{t.name.clone().unwrap_or_default()}</td>
            <td><code class="wrap">{what}</code></td>
            <td>{if t.paused { "paused" } else { "active" }}</td>
        </tr>
    }
}
