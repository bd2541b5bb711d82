//! `/triggers`: every workflow's webhooks and schedules in one list; each opens its workflow's
//! triggers page, where they are managed and their deliveries read.

use super::trigger_row::where_or_when;
use crate::api_triggers;
use crate::components::fetch::load;
use crate::components::table_parts::{TableHead, TableRows};
use leptos::prelude::*;
use trellis_model::api::Trigger;

const COLUMNS: &[(&str, &str)] = &[("Workflow", ""), ("Kind", ""), ("Name", ""), ("Where or when", ""), ("State", "")];

#[component]
pub fn AllTriggersPage() -> impl IntoView {
    let triggers = RwSignal::new(None::<Vec<Trigger>>);
    load(api_triggers::list_all(), move |list| triggers.set(Some(list)));
    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Triggers"</h1></div>
            <table class="workflows triggers" data-testid="all-triggers">
                <TableHead columns=COLUMNS />
                <TableRows rows=triggers columns=5 row=|t| view! { <Row t=t /> }
                    empty="No triggers yet: a workflow's designer has a Triggers link to add one." />
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
