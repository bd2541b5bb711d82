//! `/`: the landing page. What runs, waits and failed (live from the dashboard feed), the
//! instances finished per minute or hour stacked by status, run durations per workflow, the
//! busiest workflows and the largest failure groups. Every number links to its instances.

use super::durations_chart::DurationsChart;
use super::failure_groups::FailureGroups;
use super::now_tiles::NowTiles;
use super::throughput_panel::ThroughputPanel;
use crate::api;
use crate::components::fetch::load as fetch;
use crate::components::run::state::browser_now;
use crate::components::run::stream::follow_feed;
use crate::urls::encode_component;
use chrono::Duration;
use leptos::prelude::*;
use trellis_model::api::{FailureReport, InstanceStats, StatusCounts};

/// How often live changes may reread the figures.
const LIVE_REFRESH: std::time::Duration = std::time::Duration::from_secs(2);

/// The chart's range: the last hour by minute, or the last day by hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Range {
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
    let slow = RwSignal::new(None::<i64>);
    let range = RwSignal::new(Range::Hour);

    let load = move || {
        let query = range.get_untracked().query();
        let figures = async move {
            let page = api::list_instances(&format!("{}/instances?limit=1", crate::urls::API)).await?;
            let slow_page = api::list_instances(&format!("{}/instances?slow=true&limit=1", crate::urls::API)).await?;
            let slow_runs = slow_page.counts.get(trellis_model::InstanceStatus::Running);
            Ok((page.counts, api::instance_stats(&query).await?, api::failures("limit=5").await?, slow_runs))
        };
        fetch(figures, move |(c, s, f, n)| {
            counts.set(Some(c));
            stats.set(Some(s));
            failures.set(Some(f));
            slow.set(Some(n));
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

    let durations = Signal::derive(move || stats.with(|s| s.as_ref().map(|s| s.durations.clone()).unwrap_or_default()));

    view! {
        <main class="page wide dashboard">
            <div class="toolbar"><h1>"Dashboard"</h1></div>
            <NowTiles counts=counts failures=failures slow=slow />
            <ThroughputPanel stats=stats range=range />
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
