//! A `subworkflow` node's workflow field: a select of the published workflows (the list's first
//! page, by name), keeping the stored id selectable when it is not among them.

use crate::api;
use leptos::prelude::*;

#[component]
pub fn WorkflowPicker(testid: String, initial: String, on_pick: Callback<String>) -> impl IntoView {
    let list = LocalResource::new(|| api::list_workflows(None, None, false));
    let options = move || {
        let workflows = list.get().and_then(Result::ok).map(|page| page.items).unwrap_or_default();
        let known = workflows.iter().any(|w| w.id == initial);
        let stored = (!initial.is_empty() && !known).then(|| {
            let id = initial.clone();
            view! { <option value=id.clone() selected=true>{format!("{id} (not in the list)")}</option> }
        });
        let published = workflows.into_iter().filter(|w| w.latest_version.is_some()).map(|w| {
            let label = format!("{} (v{})", w.name, w.latest_version.unwrap_or_default());
            let selected = w.id == initial;
            view! { <option value=w.id selected=selected>{label}</option> }
        });
        view! {
            <option value="" selected=initial.is_empty()>"(choose a workflow)"</option>
            {stored}
            {published.collect_view()}
        }
    };
    view! {
        <select data-testid=testid on:change=move |ev| on_pick.run(event_target_value(&ev))>
            {options}
        </select>
    }
}
