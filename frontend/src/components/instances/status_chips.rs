//! The count of each status under the current filter, as chips: clicking one adds its status
//! to the statuses shown (or takes it out again); "All" shows every status.

use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;
use trellis_model::api::StatusCounts;
use trellis_model::InstanceStatus;

#[component]
pub fn StatusChips(
    #[prop(into)] counts: Signal<Option<StatusCounts>>,
    #[prop(into)] filter: Signal<InstanceFilter>,
    /// `None` for "All", else the status to add or take out.
    on_pick: Callback<Option<InstanceStatus>>,
) -> impl IntoView {
    let total = move || counts.with(|c| c.as_ref().map(|c| c.0.values().sum::<i64>()).unwrap_or(0));
    view! {
        <div class="status-chips" role="group" aria-label="Filter by status">
            <button
                type="button"
                class="chip"
                aria-pressed=move || filter.with(|f| f.status.is_empty()).to_string()
                data-testid="chip-all"
                on:click=move |_| on_pick.run(None)
            >
                "All " <span class="count">{total}</span>
            </button>
            {InstanceStatus::ALL.iter().map(|status| {
                let status = *status;
                let n = move || counts.with(|c| c.as_ref().map(|c| c.get(status)).unwrap_or(0));
                let chosen = move || filter.with(|f| f.status.contains(&status));
                view! {
                    <button
                        type="button"
                        class=format!("chip run-{}", status.as_str())
                        aria-pressed=move || chosen().to_string()
                        data-testid=format!("chip-{}", status.as_str())
                        on:click=move |_| on_pick.run(Some(status))
                    >
                        {status.as_str().replace('_', " ")} " " <span class="count">{n}</span>
                    </button>
                }
            }).collect_view()}
        </div>
    }
}
