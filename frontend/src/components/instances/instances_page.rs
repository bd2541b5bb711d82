//! `/instances`: the filter from the address, the status counts as chips, the table with
//! "Load more", and the dashboard feed keeping rows and counts current without a reload.

use super::bulk_bar::BulkBar;
use super::filters_bar::FiltersBar;
use super::instance_table::InstanceTable;
use super::status_chips::StatusChips;
use crate::api;
use crate::components::run::state::browser_now;
use crate::components::run::stream::Stream;
use crate::components::{app_header::AppHeader, error_alert::ErrorAlert, session::use_session};
use crate::instance_filter::InstanceFilter;
use crate::instances::InstanceList;
use crate::run::actions::may_act;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_query_map};
use std::collections::HashMap;
use std::time::Duration;
use trellis_model::InstanceStatus;

/// How often live changes may reload the first page and the counts.
const LIVE_REFRESH: Duration = Duration::from_secs(1);

#[component]
pub fn InstancesPage() -> impl IntoView {
    let session = use_session();
    let query = use_query_map();
    let parsed = Memo::new(move |_| query.with(|q| InstanceFilter::parse(q.into_iter().map(|(k, v)| (k.as_ref(), v)))));
    let filter = Signal::derive(move || parsed.with(|p| p.filter.clone()));
    let job = Memo::new(move |_| query.with(|q| q.get("job")));
    let warnings = Signal::derive(move || parsed.with(|p| (!p.warnings.is_empty()).then(|| p.warnings.join(" "))));
    let list = RwSignal::new(InstanceList::default());
    let names = RwSignal::new(HashMap::<String, String>::new());
    let selected = RwSignal::new(Vec::<String>::new());
    let me = LocalResource::new(api::me);
    let may_act = Signal::derive(move || me.get().and_then(Result::ok).is_some_and(|m| may_act(m.role)));
    let navigate = use_navigate();
    crate::components::title::set_title("Instances");

    let load = move |cursor: Option<String>| {
        let ticket = list.try_update(|l| l.begin(cursor.is_some())).expect("list lives with the page");
        let url = filter.get_untracked().api_url(cursor.as_deref(), crate::urls::PAGE_SIZE);
        spawn_local(async move {
            let result = api::list_instances(&url).await;
            if let Err(err) = &result {
                session.note(err);
            }
            list.update(|l| l.finish(ticket, result));
        });
    };
    Effect::new(move |_| {
        filter.track();
        // A selection belongs to the view it was made in.
        selected.set(Vec::new());
        load(None);
    });
    spawn_local(async move {
        if let Ok(page) = api::list_workflows(None, None, true).await {
            names.set(page.items.into_iter().map(|w| (w.id, w.name)).collect());
        }
    });

    // Live: a row changes colour at once; the first page and counts are reread at most once a second.
    let dirty = RwSignal::new(false);
    let stream = Stream::open(
        &format!("{}/events", crate::urls::API),
        move |entry| {
            let workflow = entry.data.get("workflow_id").and_then(|v| v.as_str()).unwrap_or_default().to_owned();
            let status = entry.data.get("status").and_then(|v| v.as_str()).and_then(InstanceStatus::parse);
            if let Some(status) = status {
                list.update(|l| l.restatus(&entry.instance_id, status));
            }
            if filter.with_untracked(|f| f.may_admit(&workflow, status)) {
                dirty.set(true);
            }
        },
        || {},
    )
    .ok();
    let stream = StoredValue::new_local(stream);
    let tick = set_interval_with_handle(
        move || {
            if dirty.get_untracked() && !list.with_untracked(|l| l.loading) {
                dirty.set(false);
                load(None);
            }
        },
        LIVE_REFRESH,
    )
    .ok();
    on_cleanup(move || {
        stream.with_value(|s| {
            if let Some(s) = s {
                s.close();
            }
        });
        if let Some(h) = tick {
            h.clear();
        }
    });

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
    let job_done = Callback::new(move |_: ()| load(None));
    let items = Signal::derive(move || list.with(|l| l.items.clone()));
    let counts = Signal::derive(move || list.with(|l| l.counts.clone()));
    let list_error = Signal::derive(move || list.with(|l| l.error.clone()));
    let empty =
        Signal::derive(move || list.with(|l| l.is_empty()).then(|| "No instances match these filters.".to_owned()));
    let load_more = move |_| {
        if let Some(cursor) = list.with_untracked(InstanceList::more_cursor) {
            load(Some(cursor));
        }
    };
    let workflows = Signal::derive(move || {
        let mut all: Vec<(String, String)> = names.get().into_iter().collect();
        all.sort_by_key(|w| w.1.to_lowercase());
        all
    });

    view! {
        <AppHeader username=session.username() />
        <main class="page wide">
            <div class="toolbar">
                <h1>"Instances"</h1>
            </div>
            <ErrorAlert message=warnings />
            <ErrorAlert message=session.error() />
            <FiltersBar filter=filter workflows=workflows now=Signal::derive(browser_now) on_change=on_change />
            <StatusChips counts=counts filter=filter on_pick=show_status />
            <BulkBar filter=filter selected=selected allowed=may_act job=job on_job=follow_job on_done=job_done />
            <ErrorAlert message=list_error />
            <InstanceTable items=items empty_message=empty selectable=may_act selected=selected />
            <Show when=move || list.with(|l| l.is_empty() && !filter.with(InstanceFilter::is_empty))>
                <p class="clear-filters"><a href="/instances">"Clear filters"</a></p>
            </Show>
            <Show when=move || list.with(|l| l.next_cursor.is_some())>
                <button type="button" class="load-more" disabled=move || list.with(|l| l.loading) on:click=load_more>
                    "Load more"
                </button>
            </Show>
        </main>
    }
}
