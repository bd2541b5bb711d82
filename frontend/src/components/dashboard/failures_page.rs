//! `/failures`: failure triage. The failures of the last hour, day or week grouped by
//! workflow, failing node and error class; each group opens as its instances, and operators
//! retry a group as one bulk job (dry run and preview first).

use super::failure_groups::FailureGroups;
use crate::api;
use crate::components::instances::bulk_bar::BulkBar;
use crate::components::run::state::browser_now;
use crate::components::{fetch::load as fetch, session::use_session};
use crate::instance_filter::InstanceFilter;
use crate::urls::encode_component;
use chrono::Duration;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};
use trellis_model::api::FailureReport;
use trellis_model::JobKind;

/// The ranges offered: address value, label, hours.
const RANGES: [(&str, &str, i64); 3] =
    [("1h", "Last hour", 1), ("24h", "Last 24 h", 24), ("7d", "Last 7 days", 24 * 7)];

#[component]
pub fn FailuresPage() -> impl IntoView {
    let query = use_query_map();
    let navigate = use_navigate();
    let range = Memo::new(move |_| {
        let asked = query.with(|q| q.get("range")).unwrap_or_default();
        RANGES.iter().find(|r| r.0 == asked).copied().unwrap_or(RANGES[1])
    });
    let report = RwSignal::new(None::<FailureReport>);
    let allowed = use_session().may_act();
    let chosen = RwSignal::new(None::<InstanceFilter>);
    let job = RwSignal::new(None::<String>);

    let load = move || {
        let since = crate::format::rfc3339(&(browser_now() - Duration::hours(range.get_untracked().2)));
        let query = format!("limit=100&since={}", encode_component(&since));
        fetch(async move { api::failures(&query).await }, move |r| report.set(Some(r)));
    };
    Effect::new(move |_| {
        range.track();
        load();
    });
    let retry = Callback::new(move |filter: InstanceFilter| {
        job.set(None);
        chosen.set(Some(filter));
    });
    let summary = move || {
        report.with(|r| {
            r.as_ref().map(|r| match (r.total, r.groups.len()) {
                (0, _) => "No failures.".to_owned(),
                (1, _) => "1 failure.".to_owned(),
                (n, g) => format!("{n} failures in {g} group{}.", if g == 1 { "" } else { "s" }),
            })
        })
    };

    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Failures"</h1></div>
            <div class="status-chips" role="group" aria-label="Range">
                {RANGES.iter().map(|r| {
                    let navigate = navigate.clone();
                    let value = r.0;
                    view! {
                        <button type="button" class="chip plain" aria-pressed=move || (range.get().0 == value).to_string()
                            data-testid=format!("range-{value}")
                            on:click=move |_| navigate(&format!("/failures?range={value}"), Default::default())>{r.1}</button>
                    }
                }).collect_view()}
                <span class="muted" data-testid="failures-summary">{summary}</span>
            </div>
            {move || chosen.get().map(|filter| {
                let what = format!(
                    "Retry the group: node `{}` failing with “{}”.",
                    filter.node.clone().unwrap_or_else(|| "(instance timeout)".to_owned()),
                    filter.error_class.clone().unwrap_or_default()
                );
                let filter = Signal::derive(move || filter.clone());
                view! {
                    <div class="group-retry" data-testid="group-retry">
                        <p><strong>{what}</strong></p>
                        <BulkBar filter=filter selected=RwSignal::new(Vec::new()) allowed=allowed job=job
                            on_job=Callback::new(move |j| job.set(j)) on_done=Callback::new(move |_| load())
                            only=JobKind::Retry />
                    </div>
                }
            })}
            {move || if allowed.get() {
                view! { <FailureGroups report=report limit=100 on_retry=retry /> }.into_any()
            } else {
                view! { <FailureGroups report=report limit=100 /> }.into_any()
            }}
        </main>
    }
}
