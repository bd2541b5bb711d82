//! `/`: the landing page. What runs, waits and failed (live from the dashboard feed), the
//! instances finished per minute or hour stacked by status, run durations per workflow, the
//! busiest workflows and the largest failure groups. Every number links to its instances.

use super::durations_chart::DurationsChart;
use super::failure_groups::FailureGroups;
use super::throughput_chart::ThroughputChart;
use crate::api;
use crate::components::fetch::load as fetch;
use crate::components::run::state::browser_now;
use crate::components::run::stream::follow_feed;
use crate::urls::encode_component;
use chrono::Duration;
use leptos::prelude::*;
use trellis_model::api::{FailureReport, InstanceStats, StatusCounts};
use trellis_model::InstanceStatus;

/// How often live changes may reread the figures.
const LIVE_REFRESH: std::time::Duration = std::time::Duration::from_secs(2);

/// The chart's range: the last hour by minute, or the last day by hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    Hour,
    Day,
}

impl Range {
    fn query(self) -> String {
        let (span, bucket) = match self {
            Range::Hour => (Duration::hours(1), "minute"),
            Range::Day => (Duration::hours(24), "hour"),
        };
        let since = crate::format::rfc3339(&(browser_now() - span));
        format!("since={}&bucket={bucket}", encode_component(&since))
    }
}

#[component]
pub fn DashboardPage() -> impl IntoView {
    let counts = RwSignal::new(None::<StatusCounts>);
    let stats = RwSignal::new(None::<InstanceStats>);
    let failures = RwSignal::new(None::<FailureReport>);
    let range = RwSignal::new(Range::Hour);

    let load = move || {
        let query = range.get_untracked().query();
        let figures = async move {
            let page = api::list_instances(&format!("{}/instances?limit=1", crate::urls::API)).await?;
            Ok((page.counts, api::instance_stats(&query).await?, api::failures("limit=5").await?))
        };
        fetch(figures, move |(c, s, f)| {
            counts.set(Some(c));
            stats.set(Some(s));
            failures.set(Some(f));
        });
    };
    Effect::new(move |_| {
        range.track();
        load();
    });

    // Live: any change marks the figures stale; they are reread at most every two seconds.
    follow_feed(
        |_| true,
        LIVE_REFRESH,
        move || {
            load();
            true
        },
    );

    let count = move |status: InstanceStatus| counts.with(|c| c.as_ref().map(|c| c.get(status)));
    let failed_day = move || failures.with(|f| f.as_ref().map(|f| f.total));
    let durations = Signal::derive(move || stats.with(|s| s.as_ref().map(|s| s.durations.clone()).unwrap_or_default()));
    let range_button = move |which: Range, label: &'static str| {
        view! {
            <button type="button" class="chip plain" aria-pressed=move || (range.get() == which).to_string()
                data-testid=format!("range-{}", if which == Range::Hour { "hour" } else { "day" })
                on:click=move |_| range.set(which)>{label}</button>
        }
    };

    view! {
        <main class="page wide dashboard">
            <div class="toolbar"><h1>"Dashboard"</h1></div>
            <section class="tiles" aria-label="Instances now">
                <Tile label="Running" value=Signal::derive(move || count(InstanceStatus::Running)) href="/instances?status=running" test_id="tile-running" />
                <Tile label="Queued" value=Signal::derive(move || count(InstanceStatus::Queued)) href="/instances?status=queued" test_id="tile-queued" />
                <Tile label="Paused" value=Signal::derive(move || count(InstanceStatus::Paused)) href="/instances?status=paused" test_id="tile-paused" />
                <Tile label="Failed, last 24 h" value=Signal::derive(failed_day) href="/failures" test_id="tile-failed" danger=true />
            </section>
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
            <div class="panels">
                <section class="panel" aria-labelledby="durations-title">
                    <h2 id="durations-title">"Run durations and busiest workflows"</h2>
                    <DurationsChart durations=durations />
                </section>
                <section class="panel" aria-labelledby="failures-title">
                    <header class="panel-header">
                        <h2 id="failures-title">"Top failures, last 24 h"</h2>
                        <a href="/failures">"All failures"</a>
                    </header>
                    <FailureGroups report=failures limit=5 compact=true />
                </section>
            </div>
        </main>
    }
}

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
