//! The instance's version of the workflow, drawn read-only and fitted to the panel, each node
//! coloured by its status in the run, with the legend of those colours.

use crate::components::run::node_details::NodeDetails;
use crate::components::run::retry_from_here::RetryFromHere;
use crate::components::run::run_node::RunNode;
use crate::components::run::state::RunView;
use crate::components::scene::scene_svg::{Camera, SceneSvg};
use crate::run::graph;
use leptos::prelude::*;

#[component]
pub fn RunGraph() -> impl IntoView {
    let v = expect_context::<RunView>();
    let scene = Memo::new(move |_| {
        v.definition.with(|d| d.as_ref().map(|d| v.run.with(|r| graph::scene(d, r))).unwrap_or_default())
    });
    view! {
        <section class="run-graph" aria-label="Workflow graph">
            <SceneSvg
                scene=scene.into()
                camera=Camera::Fit { width: 640.0, height: 420.0, margin: 30.0 }
                node=|id, shape| view! { <RunNode id=id shape=shape /> }
                {..} class="canvas run" data-testid="run-graph" role="group" aria-label="Nodes by status"
            />
            <ul class="run-legend" aria-label="Status colours">
                {graph::legend()
                    .into_iter()
                    .map(|(class, label)| view! { <li class=class><span class="swatch"></span>{label}</li> })
                    .collect_view()}
                {move || v.retry.with(Option::is_some).then(|| view! {
                    <li class="rerun" data-testid="legend-rerun"><span class="swatch"></span>"will run again"</li>
                })}
            </ul>
            <RetryFromHere />
            <NodeDetails />
        </section>
    }
}
