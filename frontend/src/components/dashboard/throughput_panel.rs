//! The dashboard's "Instances finished" panel: the range (the last hour by minute or the last
//! day by hour), the chart stacked by status, and its legend.

use super::dashboard_page::Range;
use super::throughput_chart::ThroughputChart;
use leptos::prelude::*;
use trellis_model::api::InstanceStats;

#[component]
pub fn ThroughputPanel(stats: RwSignal<Option<InstanceStats>>, range: RwSignal<Range>) -> impl IntoView {
    let range_button = move |which: Range, label: &'static str| {
        view! {
            <button type="button" class="chip plain" aria-pressed=move || (range.get() == which).to_string()
                data-testid=format!("range-{}", if which == Range::Hour { "hour" } else { "day" })
                on:click=move |_| range.set(which)>{label}</button>
        }
    };
    view! {
        <section class="panel" aria-labelledby="throughput-title">
            <header class="panel-header">
                <h2 id="throughput-title">"Instances finished"</h2>
                <div class="status-chips" role="group" aria-label="Range">
                    {range_button(Range::Hour, "Last hour, per minute")}
                    {range_button(Range::Day, "Last 24 h, per hour")}
                </div>
            </header>
            <ThroughputChart stats=stats />
            <p class="legend muted">
                <span class="swatch run-succeeded"></span>"succeeded "
                <span class="swatch run-failed"></span>"failed "
                <span class="swatch run-timed_out"></span>"timed out "
                <span class="swatch run-canceled"></span>"canceled"
            </p>
        </section>
    }
}
