//! `/instances`: the filter from the address, the status counts as chips, the table with
//! "Load more", and the dashboard feed keeping rows and counts current without a reload.

use super::bulk_bar::BulkBar;
use super::export_links::ExportLinks;
use super::filters_bar::FiltersBar;
use super::instance_table::InstanceTable;
use super::status_chips::StatusChips;
use crate::api;
use crate::components::fetch::load;
use crate::components::paged::{LoadMore, Paged};
use crate::components::run::state::browser_now;
use crate::components::run::stream::follow_feed;
use crate::components::views::save_view_form::SaveViewForm;
use crate::components::{error_alert::ErrorAlert, session::use_session};
use crate::instance_filter::InstanceFilter;
use crate::paged::Refresh;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};
use std::time::Duration;
use trellis_model::api::{InstanceSummary, Page, StatusCounts};
use trellis_model::InstanceStatus;

/// How often live changes may reload the first page and the counts.
const LIVE_REFRESH: Duration = Duration::from_secs(1);

#[component]
pub fn InstancesPage() -> impl IntoView {
    let query = use_query_map();
    let parsed = Memo::new(move |_| query.with(|q| InstanceFilter::parse(q.into_iter().map(|(k, v)| (k.as_ref(), v)))));
    let filter = Signal::derive(move || parsed.with(|p| p.filter.clone()));
    let job = Memo::new(move |_| query.with(|q| q.get("job")));
    let warnings = Signal::derive(move || parsed.with(|p| (!p.warnings.is_empty()).then(|| p.warnings.join(" "))));
    let selected = RwSignal::new(Vec::<String>::new());
    let may_act = use_session().may_act();
    let navigate = use_navigate();
    // Live refreshes reread the first page and keep the rows loaded below it.
    let paged = Paged::new(Refresh::KeepBelow, move |cursor| {
        let url = filter.get_untracked().api_url(cursor.as_deref(), crate::urls::PAGE_SIZE);
        async move {
            let page = api::list_instances(&url).await?;
            Ok((Page { items: page.items, next_cursor: page.next_cursor }, page.counts))
        }
    });
    let list = paged.list;
    Effect::new(move |_| {
        filter.track();
        // A selection belongs to the view it was made in.
        selected.set(Vec::new());
        paged.reload();
    });
    let workflows = workflow_choices();
    keep_live(paged, filter);

    let show = {
        let navigate = navigate.clone();
        move |f: InstanceFilter| navigate(&f.page(), Default::default())
    };
    let show_status = {
        let show = show.clone();
        Callback::new(move |status: Option<InstanceStatus>| {
            let now = filter.get_untracked();
            show(match status {
                Some(status) => now.toggled(status),
                None => InstanceFilter { status: Vec::new(), ..now },
            })
        })
    };
    let on_change = {
        let show = show.clone();
        Callback::new(move |f: InstanceFilter| show(f))
    };
    let follow_job = Callback::new(move |j: Option<String>| {
        navigate(&filter.get_untracked().page_with_job(j.as_deref()), Default::default())
    });
    let job_done = Callback::new(move |_: ()| paged.reload());
    let empty = paged.empty_text(|| "No instances match these filters.".to_owned());

    view! {
        <main class="page wide">
            <div class="toolbar">
                <h1>"Instances"</h1>
                <SaveViewForm />
                <ExportLinks filter=filter />
            </div>
            <ErrorAlert message=warnings />
            <FiltersBar filter=filter workflows=workflows now=Signal::derive(browser_now) on_change=on_change />
            <StatusChips counts=paged.extra() filter=filter on_pick=show_status />
            <BulkBar filter=filter selected=selected allowed=may_act job=job on_job=follow_job on_done=job_done />
            <InstanceTable items=paged.items() empty_message=empty selectable=may_act selected=selected />
            <Show when=move || list.with(|l| l.is_empty() && !filter.with(InstanceFilter::is_empty))>
                <p class="clear-filters"><a href="/instances">"Clear filters"</a></p>
            </Show>
            <LoadMore paged=paged />
        </main>
    }
}

type InstancePages = Paged<InstanceSummary, StatusCounts>;

/// Live: a row changes colour at once; the first page and counts are reread at most once a second.
fn keep_live(paged: InstancePages, filter: Signal<InstanceFilter>) {
    let list = paged.list;
    follow_feed(
        move |entry| {
            let workflow = entry.data.get("workflow_id").and_then(|v| v.as_str()).unwrap_or_default().to_owned();
            let status = entry.data.get("status").and_then(|v| v.as_str()).and_then(InstanceStatus::parse);
            if let Some(status) = status {
                list.update(|l| l.update_row(&entry.instance_id, |row| row.status = status));
            }
            filter.with_untracked(|f| f.may_admit(&workflow, status))
        },
        LIVE_REFRESH,
        move || {
            let idle = !list.with_untracked(|l| l.loading);
            if idle {
                paged.reload();
            }
            idle
        },
    );
}

/// `(id, name)` of every workflow, archived ones too, by name: the filter's choices.
fn workflow_choices() -> Signal<Vec<(String, String)>> {
    let names = RwSignal::new(Vec::new());
    load(api::workflow_names(true, api::WORKFLOW_CHOICES), move |all| names.set(all));
    names.into()
}
