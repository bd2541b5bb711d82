//! The failure group the instances list is narrowed to (from the failures page), as a sentence,
//! with the way back to every failure.

use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;

/// The failure group the list is narrowed to, if any, as a sentence.
fn failure_text(f: &InstanceFilter) -> Option<String> {
    match (&f.node, &f.error_class) {
        (None, None) => None,
        (Some(node), None) => Some(format!("Failed at node `{node}`.")),
        (None, Some(class)) => Some(format!("Failed with “{class}”.")),
        (Some(node), Some(class)) => Some(format!("Failed at node `{node}` with “{class}”.")),
    }
}

#[component]
pub fn FailureFilter(filter: Signal<InstanceFilter>, on_clear: Callback<()>) -> impl IntoView {
    move || {
        filter.with(failure_text).map(|text| {
            view! {
                <p class="failure-filter" data-testid="failure-filter">
                    {text}
                    " "
                    <button type="button" class="link" on:click=move |_| on_clear.run(())>"Show every failure"</button>
                </p>
            }
        })
    }
}
