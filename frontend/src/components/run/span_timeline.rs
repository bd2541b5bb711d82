//! The span timeline: a waterfall with one row per span, indented under its parent, the bar
//! placed from the instance's start; open spans grow with the clock. A row is a button: choosing
//! it shows the span's attributes and error below. A map's items are one row per map attempt
//! that expands (a few hundred items at a time) when chosen. Only the rows scrolled into view
//! are drawn (rows are of one height): a 500-node run has a thousand spans.

use crate::components::run::span_details::SpanDetails;
use crate::components::run::state::RunView;
use crate::run::waterfall::{self, Fold, Row, ITEMS_SHOWN, ROW_PX};
use leptos::prelude::*;
use std::collections::{BTreeMap, HashMap};

#[component]
pub fn SpanTimeline() -> impl IntoView {
    let v = expect_context::<RunView>();
    let shown = RwSignal::new(BTreeMap::<String, usize>::new());
    let rows = Memo::new(move |_| shown.with(|sh| v.run.with(|r| waterfall::rows(r, v.now.get(), sh))));
    // Each row finds itself here rather than scanning the list: thousands of rows stay linear.
    let places = Memo::new(move |_| {
        rows.with(|r| r.iter().enumerate().map(|(i, r)| (r.span_id.clone(), i)).collect::<HashMap<_, _>>())
    });
    let total = move || rows.with(|r| r.iter().map(|r| r.offset_ms + r.duration_ms).max().unwrap_or(0));
    let scrolled = RwSignal::new(0.0);
    let window = Memo::new(move |_| rows.with(|r| waterfall::window(r.len(), scrolled.get())));
    let drawn = move || {
        let range = window.get();
        rows.with(|r| r[range].iter().map(|r| r.span_id.clone()).collect::<Vec<_>>())
    };
    // The rows above and below the drawn ones, as empty space of their height.
    let above = move || format!("height: {}px", window.get().start as f64 * ROW_PX);
    let below = move || format!("height: {}px", rows.with(|r| r.len() - window.get().end) as f64 * ROW_PX);
    let on_scroll =
        move |ev: leptos::ev::Event| scrolled.set(event_target::<web_sys::Element>(&ev).scroll_top() as f64);
    view! {
        <section class="span-timeline" aria-labelledby="timeline-title">
            <h2 id="timeline-title">
                "Timeline "
                <span class="muted">{move || waterfall::duration(total())}</span>
            </h2>
            <ol class="spans" data-testid="span-timeline" on:scroll=on_scroll>
                <li class="span-space" aria-hidden="true" style=above></li>
                <For each=drawn key=|id| id.clone() let:id>
                    <SpanRow rows=rows places=places shown=shown id=id />
                </For>
                <li class="span-space" aria-hidden="true" style=below></li>
            </ol>
            {move || rows.with(|r| r.is_empty()).then(|| view! { <p class="muted">"No spans yet."</p> })}
            <SpanDetails rows=rows.into() />
        </section>
    }
}

/// What choosing a fold row does to the expanded maps.
fn unfold(shown: &mut BTreeMap<String, usize>, fold: &Fold) {
    match fold {
        Fold::Items { parent, expanded: true } => drop(shown.remove(parent)),
        Fold::Items { parent, expanded: false } => drop(shown.insert(parent.clone(), ITEMS_SHOWN)),
        Fold::More { parent, .. } => *shown.entry(parent.clone()).or_default() += ITEMS_SHOWN,
    }
}

#[component]
fn SpanRow(
    rows: Memo<Vec<Row>>,
    places: Memo<HashMap<String, usize>>,
    shown: RwSignal<BTreeMap<String, usize>>,
    id: String,
) -> impl IntoView {
    let v = expect_context::<RunView>();
    let key = id.clone();
    let row = Memo::new(move |_| places.with(|p| p.get(&key).and_then(|&i| rows.with(|r| r.get(i).cloned()))));
    let get = move |f: fn(&Row) -> String| row.with(|r| r.as_ref().map(f).unwrap_or_default());
    let key_at = id.clone();
    let key = id.clone();
    let selected = Memo::new(move |_| v.selected.with(|s| s.as_deref() == Some(key.as_str())));
    let choose = move |_| match row.with_untracked(|r| r.as_ref().and_then(|r| r.fold.clone())) {
        Some(fold) => shown.update(|s| unfold(s, &fold)),
        None => v.selected.update(|s| *s = if s.as_deref() == Some(id.as_str()) { None } else { Some(id.clone()) }),
    };
    let tooltip = move || {
        get(|row| {
            let mut lines = vec![format!("{} · {}", row.name, waterfall::duration(row.duration_ms))];
            lines.extend(row.error.iter().map(|e| format!("error: {e}")));
            lines.extend(row.attributes.iter().map(|(k, v)| format!("{k}: {v}")));
            lines.join("\n")
        })
    };
    let class = move || {
        let fold = get(|r| if r.fold.is_some() { " fold".into() } else { String::new() });
        let base =
            get(|r| format!("span-row kind-{} status-{}{}", r.kind, r.status, if r.open { " open" } else { "" }));
        format!("{base}{fold}{}", if selected.get() { " selected" } else { "" })
    };
    let expanded = move || match row.with(|r| r.as_ref().and_then(|r| r.fold.clone())) {
        Some(Fold::Items { expanded, .. }) => expanded.to_string(),
        Some(Fold::More { .. }) => "false".to_owned(),
        None => selected.get().to_string(),
    };
    let position = move || places.with(|p| p.get(&key_at).map(|i| (i + 1).to_string()));
    let count = move || rows.with(|r| r.len().to_string());
    view! {
        <li aria-posinset=position aria-setsize=count>
            <button
                type="button"
                class=class
                data-testid=move || get(|r| format!("span-{}", r.name.replace(' ', "-")))
                data-kind=move || get(|r| r.kind.to_string())
                data-open=move || get(|r| r.open.to_string())
                aria-expanded=expanded
                title=tooltip
                on:click=choose
            >
                <span class="span-name" style=move || get(|r| format!("padding-left: {}rem", r.depth as f64 * 0.9))>{move || get(|r| r.name.clone())}</span>
                <span class="span-track">
                    <span class="span-bar" style=move || get(|r| format!("left: {:.3}%; width: {:.3}%", r.left, r.width))></span>
                </span>
                <span class="span-duration">{move || get(|r| waterfall::duration(r.duration_ms))}</span>
            </button>
        </li>
    }
}
