//! A `map` node's items in the node details: a page of the items endpoint with a status filter
//! and next/previous, reread every few seconds while the map runs (and once when it ends); a
//! clicked item's output or error opens below in the drawer's style.

use crate::api;
use crate::components::copy_button::CopyButton;
use crate::components::run::node_details::{clock, pretty};
use crate::components::run::state::RunView;
use crate::components::table_parts::TableHead;
use crate::run::items::{self, Pager, FILTERS};
use crate::urls;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::{MapItem, MapItemPage};

const PAGE: u32 = 20;
/// How often a running map's page is reread.
const EVERY: std::time::Duration = std::time::Duration::from_secs(2);
const COLUMNS: &[(&str, &str)] =
    &[("Item", ""), ("Status", ""), ("Attempts", ""), ("Started", ""), ("Duration", ""), ("Output or error", "")];

#[component]
pub fn MapItems(node: String) -> impl IntoView {
    let v = expect_context::<RunView>();
    let (filter, pager) = (RwSignal::new(String::new()), RwSignal::new(Pager::default()));
    let page = RwSignal::new(None::<MapItemPage>);
    let (error, open) = (RwSignal::new(None::<String>), RwSignal::new(None::<u32>));
    // Each read is numbered; only the latest one's answer is shown (a filter picked while a
    // reread is out must not be overwritten by it).
    let latest = StoredValue::new(0_u64);
    let key = StoredValue::new(node.clone());
    let load = move || {
        latest.update_value(|n| *n += 1);
        let mine = latest.get_value();
        let url = urls::map_items(
            &v.id.get_value(),
            &key.get_value(),
            &filter.get_untracked(),
            pager.with_untracked(Pager::current),
            PAGE,
        );
        spawn_local(async move {
            let answer = api::map_items(&url).await;
            if page.is_disposed() || latest.get_value() != mine {
                return;
            }
            match answer {
                Ok(p) => {
                    error.set(None);
                    page.set(Some(p));
                }
                Err(e) => error.set(Some(e.message())),
            }
        });
    };
    let status = Memo::new(move |_| v.run.with(|r| r.node_status(&key.get_value()).to_owned()));
    // A new filter, page or node status reads the page again.
    Effect::new(move |_| {
        filter.track();
        pager.track();
        status.track();
        load();
    });
    let tick = set_interval_with_handle(
        move || {
            if status.get_untracked() == "running" {
                load()
            }
        },
        EVERY,
    )
    .ok();
    on_cleanup(move || tick.map_or((), |h| h.clear()));
    view! {
        <section class="map-items" data-testid="map-items" aria-label="Items">
            <ItemFilter filter=filter pager=pager page=page />
            {move || error.get().map(|m| view! { <p class="field-problem" role="alert">{m}</p> })}
            <ItemTable page=page open=open />
            <ItemPager pager=pager page=page />
            <ItemDetail page=page open=open />
        </section>
    }
}

/// The status filter and the counts by status.
#[component]
fn ItemFilter(filter: RwSignal<String>, pager: RwSignal<Pager>, page: RwSignal<Option<MapItemPage>>) -> impl IntoView {
    let pick = move |ev: leptos::ev::Event| {
        filter.set(event_target_value(&ev));
        pager.set(Pager::default());
    };
    let label = |f: &str| if f.is_empty() { "all".to_owned() } else { f.replace('_', " ") };
    view! {
        <div class="map-items-bar">
            <h3>"Items"</h3>
            <label>
                "Status "
                <select data-testid="item-filter" on:change=pick>
                    {FILTERS.iter().map(|f| view! { <option value=*f>{label(f)}</option> }).collect_view()}
                </select>
            </label>
            <span class="hint" data-testid="item-counts">{move || page.with(|p| p.as_ref().map(counts_text))}</span>
        </div>
    }
}

/// Previous and next: the server pages forward by cursor, the pager remembers the way back.
#[component]
fn ItemPager(pager: RwSignal<Pager>, page: RwSignal<Option<MapItemPage>>) -> impl IntoView {
    let next = move |_| {
        let cursor = page.with_untracked(|p| p.as_ref().and_then(|p| p.next_cursor.clone()));
        pager.update(|p| {
            p.forward(cursor.as_deref());
        });
    };
    let previous = move |_| {
        pager.update(|p| {
            p.back();
        })
    };
    let no_previous = move || !pager.with(Pager::has_previous);
    let no_next = move || page.with(|p| p.as_ref().is_none_or(|p| p.next_cursor.is_none()));
    view! {
        <div class="pager">
            <button type="button" data-testid="items-previous" disabled=no_previous on:click=previous>"Previous"</button>
            <span>{move || format!("Page {}", pager.with(Pager::page))}</span>
            <button type="button" data-testid="items-next" disabled=no_next on:click=next>"Next"</button>
        </div>
    }
}

/// "100 items: 95 succeeded, 3 failed, 2 running" (the statuses that have some).
fn counts_text(p: &MapItemPage) -> String {
    let some: Vec<String> =
        p.counts.iter().filter(|(_, n)| **n > 0).map(|(s, n)| format!("{n} {}", s.replace('_', " "))).collect();
    format!("{} items: {}", p.total, some.join(", "))
}

#[component]
fn ItemTable(page: RwSignal<Option<MapItemPage>>, open: RwSignal<Option<u32>>) -> impl IntoView {
    let row = move |item: MapItem| {
        let index = item.index;
        let class = format!("status run-{}", item.status.as_str());
        view! {
            <tr data-testid="item-row" data-index=index class:selected=move || open.get() == Some(index)>
                <td><button type="button" class="link" data-testid="item-open" on:click=move |_| open.set(Some(index))>{format!("#{index}")}</button></td>
                <td class=class>{item.status.as_str().replace('_', " ")}</td>
                <td>{item.attempts}</td>
                <td>{item.started_at.as_ref().map(clock).unwrap_or_else(|| "—".to_owned())}</td>
                <td>{items::duration_ms(&item).map_or_else(|| "—".to_owned(), |ms| format!("{ms} ms"))}</td>
                <td class:error=item.error.is_some() class="outcome">{items::outcome_text(&item, 80)}</td>
            </tr>
        }
    };
    view! {
        <table class="workflows attempts items" data-testid="item-table">
            <TableHead columns=COLUMNS />
            <tbody>
                {move || page.with(|p| match p {
                    None => view! { <tr><td colspan="6" class="empty">"Loading…"</td></tr> }.into_any(),
                    Some(p) if p.items.is_empty() => view! { <tr><td colspan="6" class="empty">"No items here."</td></tr> }.into_any(),
                    Some(p) => p.items.clone().into_iter().map(row).collect_view().into_any(),
                })}
            </tbody>
        </table>
    }
}

/// The opened item's output or error, and its child instance.
#[component]
fn ItemDetail(page: RwSignal<Option<MapItemPage>>, open: RwSignal<Option<u32>>) -> impl IntoView {
    move || {
        let index = open.get()?;
        let item = page.with(|p| p.as_ref()?.items.iter().find(|i| i.index == index).cloned())?;
        let (label, text) = match (&item.error, &item.output) {
            (Some(e), _) => ("Error", e.clone()),
            (None, Some(o)) => ("Output", pretty(o)),
            (None, None) => ("Output", "No output yet.".to_owned()),
        };
        Some(view! {
            <section class="node-details item-details" data-testid="item-details" aria-label=format!("Item {index}")>
                <header>
                    <h2>{format!("Item #{index} · {}", item.status.as_str().replace('_', " "))}</h2>
                    <button type="button" on:click=move |_| open.set(None)>"Close"</button>
                </header>
                {item.child.map(|c| view! { <p><a class="child-link" href=urls::instance_page(&c) data-testid="item-child-link">"child instance"</a></p> })}
                <details open>
                    <summary>{label}</summary>
                    <CopyButton text=text.clone() label="Copy" />
                    <pre data-testid="item-output" class:error=item.error.is_some()>{text}</pre>
                </details>
            </section>
        })
    }
}
