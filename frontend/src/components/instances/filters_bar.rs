//! The instances list's filters: workflow, version, business key, the creation time range
//! with quick picks, and content. Every change becomes a new address, so the view is a link to share.

use super::content_filter::ContentFilters;
use super::failure_filter::FailureFilter;
use super::slow_filter::SlowFilter;
use super::workflow_select::WorkflowSelect;
use crate::instance_filter::{local_input, parse_time, InstanceFilter};
use chrono::{DateTime, Duration, Utc};
use leptos::prelude::*;

#[component]
pub fn FiltersBar(
    #[prop(into)] filter: Signal<InstanceFilter>,
    /// `(id, name)` of the workflows to choose from.
    #[prop(into)]
    workflows: Signal<Vec<(String, String)>>,
    #[prop(into)] now: Signal<DateTime<Utc>>,
    on_change: Callback<InstanceFilter>,
) -> impl IntoView {
    let change = move |edit: &dyn Fn(&mut InstanceFilter)| {
        let mut f = filter.get_untracked();
        edit(&mut f);
        on_change.run(f);
    };
    let text = |value: String| (!value.trim().is_empty()).then(|| value.trim().to_owned());
    let last = move |hours: i64| {
        let since = now.get_untracked() - Duration::hours(hours);
        change(&|f| {
            f.since = Some(since);
            f.until = None;
        })
    };
    view! {
        <form class="filters" role="search" aria-label="Filter instances" on:submit=|ev| ev.prevent_default()>
            <WorkflowSelect filter=filter workflows=workflows on_pick=Callback::new(move |w: Option<String>| change(&|f| f.workflow = w.clone())) />
            <label>
                "Version "
                <input
                    type="number"
                    min="1"
                    class="narrow"
                    data-testid="filter-version"
                    prop:value=move || filter.with(|f| f.version.map(|v| v.to_string()).unwrap_or_default())
                    on:change=move |ev| {
                        let v = event_target_value(&ev).trim().parse().ok().filter(|n: &i64| *n >= 1);
                        change(&|f| f.version = v)
                    }
                />
            </label>
            <label>
                "Key "
                <input
                    type="search"
                    placeholder="business key"
                    data-testid="filter-key"
                    prop:value=move || filter.with(|f| f.key.clone().unwrap_or_default())
                    on:change=move |ev| {
                        let k = text(event_target_value(&ev));
                        change(&|f| f.key = k.clone())
                    }
                />
            </label>
            <TimeField label="Created since " test_id="filter-since" filter=filter
                read=|f| f.since on_pick=Callback::new(move |t| change(&|f| f.since = t)) />
            <TimeField label="until " test_id="filter-until" filter=filter
                read=|f| f.until on_pick=Callback::new(move |t| change(&|f| f.until = t)) />
            <span class="quick-picks" role="group" aria-label="Created in the last">
                <button type="button" on:click=move |_| last(1)>"Last hour"</button>
                <button type="button" on:click=move |_| last(24)>"24 h"</button>
                <button type="button" on:click=move |_| last(24 * 7)>"7 days"</button>
            </span>
            <button type="button" data-testid="clear-filters" on:click=move |_| on_change.run(InstanceFilter::default())>
                "Clear"
            </button>
            <ContentFilters filter=filter on_change=on_change />
            <FailureFilter filter=filter on_clear=Callback::new(move |_| change(&|f| {
                f.node = None;
                f.error_class = None;
            })) />
            <SlowFilter filter=filter on_clear=Callback::new(move |_| change(&|f| f.slow = false)) />
        </form>
    }
}

/// One end of the creation time range, as a `datetime-local` input read as UTC.
#[component]
fn TimeField(
    label: &'static str,
    test_id: &'static str,
    filter: Signal<InstanceFilter>,
    read: fn(&InstanceFilter) -> Option<DateTime<Utc>>,
    on_pick: Callback<Option<DateTime<Utc>>>,
) -> impl IntoView {
    view! {
        <label>
            {label}
            <input
                type="datetime-local"
                data-testid=test_id
                prop:value=move || filter.with(|f| read(f).as_ref().map(local_input).unwrap_or_default())
                on:change=move |ev| on_pick.run(parse_time(&event_target_value(&ev)))
            />
        </label>
    }
}
