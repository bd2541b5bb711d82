//! The table of workflows. Names are user input and render as text nodes, never as markup.

use crate::components::workflow_actions::WorkflowActions;
use crate::format;
use crate::urls;
use leptos::prelude::*;
use trellis_model::api::WorkflowSummary;

#[component]
pub fn WorkflowTable(
    #[prop(into)] items: Signal<Vec<WorkflowSummary>>,
    /// What to say instead of the table when there is nothing to show; `None` while loading.
    #[prop(into)]
    empty_message: Signal<Option<String>>,
    on_changed: Callback<()>,
    on_error: Callback<String>,
) -> impl IntoView {
    view! {
        <table class="workflows">
            <thead>
                <tr>
                    <th scope="col">"Name"</th>
                    <th scope="col" class="version">"Latest version"</th>
                    <th scope="col" class="updated">"Updated"</th>
                    <th scope="col" class="actions"><span class="visually-hidden">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>
                <For
                    each=move || items.get()
                    key=|w| (w.id.clone(), w.updated_at, w.archived, w.name.clone())
                    children=move |w: WorkflowSummary| {
                        let exact = format::rfc3339(&w.updated_at);
                        let actions = view! { <WorkflowActions workflow=w.clone() on_changed=on_changed on_error=on_error /> };
                        let archived = w.archived.then(|| view! { <span class="muted">" (archived)"</span> });
                        view! {
                            <tr>
                                <td class="name"><a href=urls::designer_page(&w.id)>{w.name}</a>{archived}</td>
                                <td class="version">{format::version_label(w.latest_version)}</td>
                                <td class="updated">
                                    <time datetime=exact.clone() title=exact>
                                        {format::timestamp(&w.updated_at)}
                                    </time>
                                </td>
                                <td class="actions">{actions}</td>
                            </tr>
                        }
                    }
                />
                {move || {
                    empty_message
                        .get()
                        .map(|text| view! { <tr><td colspan="4" class="empty">{text}</td></tr> })
                }}
            </tbody>
        </table>
    }
}
