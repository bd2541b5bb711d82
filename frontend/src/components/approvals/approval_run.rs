//! The run an approval stops, beside the question: its graph drawn live by the run view's own
//! parts (the same state, stream and drawing), what the earlier nodes produced, and the way to
//! the run view. Tells the page when the approval node moves on (decided elsewhere, timed out,
//! canceled), so the question shows where it stands without a reload.

use crate::approvals::earlier_outputs;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::Loading;
use crate::components::json_block::JsonBlock;
use crate::components::run::node_details::pretty;
use crate::components::run::run_graph::RunGraph;
use crate::components::run::state::RunView;
use crate::urls;
use leptos::prelude::*;

/// Node statuses after which the node no longer waits for its approval.
fn moved_on(status: &str) -> bool {
    !matches!(status, "pending" | "ready" | "running" | "waiting")
}

#[component]
pub fn ApprovalRun(instance: String, node: String, on_node_change: Callback<()>) -> impl IntoView {
    let v = RunView::new(instance.clone());
    provide_context(v);
    v.start();
    on_cleanup(move || v.leave());

    let key = node.clone();
    let status = Memo::new(move |_| v.run.with(|r| r.node_status(&key).to_owned()));
    Effect::new(move |before: Option<String>| {
        let now = status.get();
        if before.is_some_and(|b| b != now) && moved_on(&now) {
            on_node_change.run(());
        }
        now
    });
    let outputs = Memo::new(move |_| {
        let graph = v.definition.read();
        v.detail.with(|d| d.as_ref().map(|d| earlier_outputs(&d.nodes, graph.as_ref(), &node)))
    });
    let shown_outputs = move || match outputs.get() {
        None => view! { <Loading /> }.into_any(),
        Some(list) if list.is_empty() => {
            view! { <p class="muted">"No node before the approval has an output."</p> }.into_any()
        }
        Some(list) => list
            .into_iter()
            .map(|(id, output)| {
                view! {
                    <details open class="earlier-output" data-testid="earlier-output" data-node=id.clone()>
                        <summary><code>{id.clone()}</code></summary>
                        <JsonBlock text=pretty(&output) />
                    </details>
                }
            })
            .collect_view()
            .into_any(),
    };
    view! {
        <section class="approval-run" aria-labelledby="approval-run-title">
            <div class="panel-header">
                <h2 id="approval-run-title">"The run"</h2>
                <a href=urls::instance_page(&instance) data-testid="approval-run-link">"Open the run view"</a>
            </div>
            <ErrorAlert message=v.error />
            <Show
                when=move || !v.missing.get()
                fallback=|| view! { <p class="muted">"The run is gone (removed by retention): there is no graph to draw."</p> }
            >
                <RunGraph />
            </Show>
            <h3>"What earlier nodes produced"</h3>
            {shown_outputs}
        </section>
    }
}
