//! Says that the instances list shows only slow runs (from the dashboard's tile), with the way
//! back to every instance.

use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;

#[component]
pub fn SlowFilter(filter: Signal<InstanceFilter>, on_clear: Callback<()>) -> impl IntoView {
    move || {
        filter.with(|f| f.slow).then(|| {
            view! {
                <p class="failure-filter" data-testid="slow-filter">
                    "⚠ Only running instances with a node past its slow threshold now. "
                    <button type="button" class="link" on:click=move |_| on_clear.run(())>"Show every instance"</button>
                </p>
            }
        })
    }
}
