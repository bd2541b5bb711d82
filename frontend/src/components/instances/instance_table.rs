//! The table of instances: status, workflow, version, key, created, duration, error. Names,
//! keys and errors are user data and render as text nodes, never as markup.

use crate::format;
use crate::urls;
use leptos::prelude::*;
use std::collections::HashMap;
use trellis_model::api::InstanceSummary;

#[component]
pub fn InstanceTable(
    #[prop(into)] items: Signal<Vec<InstanceSummary>>,
    /// Workflow names by id, for the workflow column.
    #[prop(into)]
    names: Signal<HashMap<String, String>>,
    #[prop(into)] empty_message: Signal<Option<String>>,
) -> impl IntoView {
    view! {
        <table class="workflows instances" data-testid="instances-table">
            <thead>
                <tr>
                    <th scope="col">"Status"</th>
                    <th scope="col">"Workflow"</th>
                    <th scope="col" class="version">"Version"</th>
                    <th scope="col">"Key"</th>
                    <th scope="col" class="updated">"Created"</th>
                    <th scope="col" class="version">"Duration"</th>
                    <th scope="col">"Error"</th>
                </tr>
            </thead>
            <tbody>
                <For
                    each=move || items.get()
                    key=|i| (i.id.clone(), i.status, i.ended_at)
                    children=move |i: InstanceSummary| {
                        let exact = format::rfc3339(&i.created_at);
                        let workflow = names
                            .with(|n| n.get(&i.workflow_id).cloned())
                            .unwrap_or_else(|| i.workflow_id.clone());
                        let error = i.error.clone().unwrap_or_default();
                        let first_line = error.lines().next().unwrap_or_default().to_owned();
                        view! {
                            <tr data-testid="instance-row" data-id=i.id.clone() data-status=i.status.as_str()>
                                <td>
                                    <a class=format!("status run-{}", i.status.as_str()) href=urls::instance_page(&i.id)>
                                        {i.status.as_str().replace('_', " ")}
                                    </a>
                                </td>
                                <td class="name"><a href=urls::instance_page(&i.id)>{workflow}</a></td>
                                <td class="version">{format!("v{}", i.version)}</td>
                                <td class="key">{i.key.clone().unwrap_or_default()}</td>
                                <td class="updated">
                                    <time datetime=exact.clone() title=exact>{format::timestamp(&i.created_at)}</time>
                                </td>
                                <td class="version">{format::run_duration(i.started_at, i.ended_at)}</td>
                                <td class="error" title=error>{first_line}</td>
                            </tr>
                        }
                    }
                />
                {move || empty_message.get().map(|text| view! { <tr><td colspan="7" class="empty">{text}</td></tr> })}
            </tbody>
        </table>
    }
}
