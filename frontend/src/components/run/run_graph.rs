//! The instance's version of the workflow, drawn read-only and fitted to the panel, each node
//! coloured by its status in the run.

use crate::components::designer::edge_line::EdgeLine;
use crate::components::run::run_node::RunNode;
use crate::components::run::state::RunView;
use crate::designer::geometry::{self, Viewport};
use crate::run::graph;
use leptos::prelude::*;

const W: f64 = 640.0;
const H: f64 = 420.0;

#[component]
pub fn RunGraph() -> impl IntoView {
    let v = expect_context::<RunView>();
    let scene = Memo::new(move |_| {
        v.definition.with(|d| d.as_ref().map(|d| v.run.with(|r| graph::scene(d, r))).unwrap_or_default())
    });
    let transform = move || {
        scene
            .with(|s| geometry::bounds(s.nodes.iter().map(|n| n.at)))
            .map(|b| Viewport::fit(b, W, H, 30.0))
            .unwrap_or_default()
            .transform()
    };
    let edge_keys = move || scene.with(|s| s.edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect::<Vec<_>>());
    let node_keys = move || scene.with(|s| s.nodes.iter().map(|n| n.id.clone()).collect::<Vec<_>>());
    view! {
        <section class="run-graph" aria-label="Workflow graph">
            <svg class="canvas run" data-testid="run-graph" viewBox=format!("0 0 {W} {H}") role="group" aria-label="Nodes by status">
                <defs>
                    <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse">
                        <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
                    </marker>
                </defs>
                <g class="world" transform=transform>
                    <g class="edges">
                        <For each=edge_keys key=|k| k.clone() let:k>
                            <EdgeLine scene=scene.into() from=k.0 to=k.1 />
                        </For>
                    </g>
                    <g class="nodes">
                        <For each=node_keys key=|id| id.clone() let:id>
                            <RunNode scene=scene.into() id=id />
                        </For>
                    </g>
                </g>
            </svg>
            <ul class="run-legend" aria-label="Status colours">
                {["pending", "running", "waiting", "succeeded", "failed", "skipped", "canceled", "timed_out"]
                    .into_iter()
                    .map(|s| view! { <li class=format!("run-{s}")><span class="swatch"></span>{s.replace('_', " ")}</li> })
                    .collect_view()}
            </ul>
        </section>
    }
}
