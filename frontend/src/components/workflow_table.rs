//! The table of workflows. Names are user input and render as text nodes, never as markup.

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
) -> impl IntoView {
    view! {
        <table class="workflows">
            <thead>
                <tr>
                    <th scope="col">"Name"</th>
                    <th scope="col" class="version">"Latest version"</th>
                    <th scope="col" class="updated">"Updated"</th>
                </tr>
            </thead>
            <tbody>
                <For
                    each=move || items.get()
                    key=|w| (w.id.clone(), w.updated_at)
                    children=move |w: WorkflowSummary| {
                        let exact = format::rfc3339(&w.updated_at);
                        view! {
                            <tr>
                                <td class="name"><a href=urls::designer_page(&w.id)>{w.name}</a></td>
                                <td class="version">{format::version_label(w.latest_version)}</td>
                                <td class="updated">
                                    <time datetime=exact.clone() title=exact>
                                        {format::timestamp(&w.updated_at)}
                                    </time>
                                </td>
                            </tr>
                        }
                    }
                />
                {move || {
                    empty_message
                        .get()
                        .map(|text| view! { <tr><td colspan="3" class="empty">{text}</td></tr> })
                }}
            </tbody>
        </table>
    }
}
