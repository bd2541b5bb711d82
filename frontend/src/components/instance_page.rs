//! `/instances/:id`: the live run view. The instance's version drawn as a graph, coloured as its
//! history arrives over server-sent events, beside a span timeline; the header with the
//! instance's status and actions; the nodes with their outputs; the input and output. An id the
//! server does not know shows "No such instance".

use crate::components::error_alert::ErrorAlert;
use crate::components::json_block::JsonBlock;
use crate::components::run::instance_header::InstanceHeader;
use crate::components::run::no_such_instance::NoSuchInstance;
use crate::components::run::node_table::NodeTable;
use crate::components::run::run_graph::RunGraph;
use crate::components::run::span_timeline::SpanTimeline;
use crate::components::run::state::{browser_now, RunView};
use crate::components::title::title_by_workflow;
use leptos::prelude::*;
use std::time::Duration;

/// How often open spans grow while the run is live.
const TICK: Duration = Duration::from_millis(250);

#[component]
pub fn InstancePage(id: String) -> impl IntoView {
    let v = RunView::new(id.clone());
    provide_context(v);
    v.start();

    title_by_workflow("Run", move || v.detail.with(|d| d.as_ref().and_then(|d| d.summary.workflow_name.clone())));

    let tick = set_interval_with_handle(
        move || {
            if !v.run.with_untracked(|r| r.is_terminal()) {
                v.now.set(browser_now());
            }
        },
        TICK,
    )
    .ok();
    on_cleanup(move || {
        v.leave();
        if let Some(h) = tick {
            h.clear();
        }
    });

    let json = |value: &serde_json::Value| serde_json::to_string_pretty(value).unwrap_or_default();
    // Below the fold when the page opens: drawn when scrolled to (`.below-fold` in style.css).
    let missing = move || view! { <NoSuchInstance id=id.clone() /> };
    view! {
        <Show when=move || !v.missing.get() fallback=missing>
        <main class="page run-view">
            <InstanceHeader />
            <ErrorAlert message=v.error />
            <div class="run-panels">
                <RunGraph />
                <SpanTimeline />
            </div>
            <section class="below-fold" aria-labelledby="nodes-title">
                <h2 id="nodes-title">"Nodes"</h2>
                <NodeTable />
            </section>
            {move || v.detail.get().map(|d| view! {
                <div class="run-io below-fold">
                    <section>
                        <h2>"Input"</h2>
                        <JsonBlock text=json(&d.input) />
                    </section>
                    {d.output.map(|o| view! {
                        <section>
                            <h2>"Output"</h2>
                            <JsonBlock text=json(&o) test_id="instance-output" />
                        </section>
                    })}
                </div>
            })}
        </main>
        </Show>
    }
}
