//! The dashboard's tiles: how many instances run, wait in the queue and are paused now, and how
//! many failed in the last day, and how many run a node past its slow threshold now; each links
//! to those instances.

use leptos::prelude::*;
use trellis_model::api::{FailureReport, StatusCounts};
use trellis_model::InstanceStatus;

#[component]
pub fn NowTiles(
    counts: RwSignal<Option<StatusCounts>>,
    failures: RwSignal<Option<FailureReport>>,
    slow: RwSignal<Option<i64>>,
) -> impl IntoView {
    let count = move |status: InstanceStatus| counts.with(|c| c.as_ref().map(|c| c.get(status)));
    let failed_day = move || failures.with(|f| f.as_ref().map(|f| f.total));
    view! {
        <section class="tiles" aria-label="Instances now">
            <Tile label="Running" value=Signal::derive(move || count(InstanceStatus::Running)) href="/instances?status=running" test_id="tile-running" />
            <Tile label="Queued" value=Signal::derive(move || count(InstanceStatus::Queued)) href="/instances?status=queued" test_id="tile-queued" />
            <Tile label="Paused" value=Signal::derive(move || count(InstanceStatus::Paused)) href="/instances?status=paused" test_id="tile-paused" />
            <Tile label="Slow now" value=Signal::derive(move || slow.get()) href="/instances?slow=true" test_id="tile-slow" danger=true />
            <Tile label="Failed, last 24 h" value=Signal::derive(failed_day) href="/failures" test_id="tile-failed" danger=true />
        </section>
    }
}

/// One figure and what it counts, linking to the instances counted.
#[component]
fn Tile(
    label: &'static str,
    #[prop(into)] value: Signal<Option<i64>>,
    href: &'static str,
    test_id: &'static str,
    #[prop(optional)] danger: bool,
) -> impl IntoView {
    view! {
        <a class="tile" class:danger=move || danger && (value.get().unwrap_or(0) > 0) href=href data-testid=test_id>
            <span class="tile-value">{move || value.get().map(|v| v.to_string()).unwrap_or_else(|| "…".to_owned())}</span>
            <span class="tile-label">{label}</span>
        </a>
    }
}
