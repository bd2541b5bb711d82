//! The instances filter's workflow: "All workflows" or one of them, by name.

use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;

#[component]
pub fn WorkflowSelect(
    filter: Signal<InstanceFilter>,
    /// `(id, name)` of the workflows to choose from.
    workflows: Signal<Vec<(String, String)>>,
    /// The workflow's id, or `None` for all of them.
    on_pick: Callback<Option<String>>,
) -> impl IntoView {
    view! {
        <label>
            "Workflow "
            <select
                data-testid="filter-workflow"
                on:change=move |ev| {
                    let value = event_target_value(&ev);
                    on_pick.run((!value.trim().is_empty()).then(|| value.trim().to_owned()))
                }
            >
                <option value="" selected=move || filter.with(|f| f.workflow.is_none())>"All workflows"</option>
                <For each=move || workflows.get() key=|w| w.clone() let:w>
                    <option value=w.0.clone() selected=move || filter.with(|f| f.workflow.as_deref() == Some(w.0.as_str()))>
                        {w.1.clone()}
                    </option>
                </For>
            </select>
        </label>
    }
}
