//! Instances finished per slot, stacked by status, as an SVG bar chart with a value axis, time
//! labels and the hovered bar's counts spelled out under it.

use crate::charts::{axis, describe, labelled, stack, tallest, time_label};
use leptos::prelude::*;
use trellis_model::api::InstanceStats;

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 40.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 8.0;

#[component]
pub fn ThroughputChart(#[prop(into)] stats: Signal<Option<InstanceStats>>) -> impl IntoView {
    let hovered = RwSignal::new(None::<usize>);
    let chart = move || {
        let stats = stats.get()?;
        let hourly = stats.bucket != "minute";
        let slots = stats.slots;
        let scale = axis(tallest(&slots));
        let plot_w = WIDTH - LEFT;
        let plot_h = HEIGHT - BOTTOM - TOP;
        let y = move |v: f64| TOP + plot_h - v / scale.top * plot_h;
        let slot_w = plot_w / slots.len().max(1) as f64;
        let ticks = scale
            .ticks
            .iter()
            .map(|t| {
                let at = y(*t);
                view! {
                    <line class="grid" x1=LEFT x2=WIDTH y1=at y2=at />
                    <text class="tick" x=LEFT - 6.0 y=at + 4.0 text-anchor="end">{format!("{t}")}</text>
                }
            })
            .collect_view();
        let last = slots.len().saturating_sub(1);
        let labels = labelled(slots.len(), 6).into_iter().map(|i| {
            let x = LEFT + (i as f64 + 0.5) * slot_w;
            // The last label ends at its bar, so it is not cut at the edge.
            let (x, anchor) = if i == last { (WIDTH, "end") } else { (x, "middle") };
            view! { <text class="tick" x=x y=HEIGHT - 6.0 text-anchor=anchor>{time_label(&slots[i].start, hourly)}</text> }
        }).collect_view();
        let bars = slots.iter().enumerate().map(|(i, slot)| {
            let x = LEFT + i as f64 * slot_w + slot_w * 0.1;
            let title = describe(slot, hourly);
            let segments = stack(slot).into_iter().map(|s| {
                let top = y(s.to);
                view! {
                    <rect class=format!("bar run-{}", s.status.as_str()) x=x y=top width=slot_w * 0.8 height=y(s.from) - top />
                }
            }).collect_view();
            view! {
                <g class="slot" on:mouseenter=move |_| hovered.set(Some(i)) on:mouseleave=move |_| hovered.set(None)>
                    <title>{title}</title>
                    // The whole column, so an empty slot can be hovered too.
                    <rect class="hit" x=LEFT + i as f64 * slot_w y=TOP width=slot_w height=plot_h />
                    {segments}
                </g>
            }
        }).collect_view();
        let hovered_text = {
            let slots = slots.clone();
            move || hovered.get().and_then(|i| slots.get(i)).map(|s| describe(s, hourly))
        };
        Some(view! {
            <svg class="chart" viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img"
                aria-label="Instances finished per slot, by status" data-testid="throughput-chart">
                {ticks}
                <line class="axis" x1=LEFT x2=WIDTH y1=y(0.0) y2=y(0.0) />
                {bars}
                {labels}
            </svg>
            <p class="chart-hover muted" data-testid="throughput-hover" aria-live="polite">
                {move || hovered_text().unwrap_or_else(|| "Hover a bar for its counts.".to_owned())}
            </p>
        })
    };
    view! { <div class="chart-box">{chart}</div> }
}
