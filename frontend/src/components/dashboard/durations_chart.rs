//! Run durations per workflow (p50 and p95 of its succeeded instances) as horizontal SVG bars
//! on one time axis, busiest workflow first, and the busiest workflows as links to their
//! instances.

use crate::charts::{axis, duration_label};
use leptos::prelude::*;
use trellis_model::api::WorkflowDurations;

const WIDTH: f64 = 560.0;
const LABEL: f64 = 150.0;
const ROW: f64 = 34.0;
/// Workflows drawn; the rest are in the instances list.
const SHOWN: usize = 8;

#[component]
pub fn DurationsChart(#[prop(into)] durations: Signal<Vec<WorkflowDurations>>) -> impl IntoView {
    move || {
        let rows: Vec<WorkflowDurations> = durations.get().into_iter().take(SHOWN).collect();
        if rows.is_empty() {
            return view! { <p class="empty muted">"No instance succeeded in this range."</p> }.into_any();
        }
        let scale = axis(rows.iter().map(|r| r.p95_ms).fold(0.0, f64::max));
        let plot = WIDTH - LABEL - 70.0;
        let x = move |ms: f64| LABEL + ms / scale.top * plot;
        let height = rows.len() as f64 * ROW + 24.0;
        let ticks = scale
            .ticks
            .iter()
            .map(|t| {
                view! {
                    <line class="grid" x1=x(*t) x2=x(*t) y1=0.0 y2=height - 20.0 />
                    <text class="tick" x=x(*t) y=height - 6.0 text-anchor="middle">{duration_label(*t)}</text>
                }
            })
            .collect_view();
        let busiest = rows
            .iter()
            .map(|d| {
                let name = d.workflow_name.clone().unwrap_or_else(|| d.workflow_id.clone());
                let href = format!("/instances?workflow={}", d.workflow_id);
                let runs = if d.count == 1 { "1 run".to_owned() } else { format!("{} runs", d.count) };
                view! { <li><a href=href>{name}</a> " " <span class="muted">{runs}</span></li> }
            })
            .collect_view();
        let bars = rows.into_iter().enumerate().map(|(i, d)| {
            let top = i as f64 * ROW + 4.0;
            let name = d.workflow_name.clone().unwrap_or_else(|| d.workflow_id.clone());
            let title = format!("{name}: p50 {}, p95 {} over {} runs", duration_label(d.p50_ms), duration_label(d.p95_ms), d.count);
            view! {
                <g class="duration-row" data-testid="duration-row">
                    <title>{title}</title>
                    <text class="label" x=LABEL - 8.0 y=top + 19.0 text-anchor="end">{shorten(&name)}</text>
                    <rect class="bar p95" x=LABEL y=top + 2.0 width=(x(d.p95_ms) - LABEL).max(1.0) height=12.0 />
                    <rect class="bar p50" x=LABEL y=top + 16.0 width=(x(d.p50_ms) - LABEL).max(1.0) height=12.0 />
                    <text class="value" x=x(d.p95_ms) + 6.0 y=top + 12.0>{format!("p95 {}", duration_label(d.p95_ms))}</text>
                    <text class="value" x=x(d.p50_ms) + 6.0 y=top + 26.0>{format!("p50 {}", duration_label(d.p50_ms))}</text>
                </g>
            }
        }).collect_view();
        view! {
            <svg class="chart" viewBox=format!("0 0 {WIDTH} {height}") role="img"
                aria-label="Run durations per workflow, p50 and p95" data-testid="durations-chart">
                {ticks}
                {bars}
            </svg>
            <h3>"Busiest (succeeded runs)"</h3>
            <ol class="busiest" data-testid="busiest">{busiest}</ol>
        }
        .into_any()
    }
}

/// A workflow name short enough for the label column; the full one is in the row's title.
fn shorten(name: &str) -> String {
    const MAX: usize = 24;
    if name.chars().count() <= MAX {
        name.to_owned()
    } else {
        format!("{}…", name.chars().take(MAX - 1).collect::<String>())
    }
}
