//! Draws a scene (nodes and edges in world units) inside the canvas' transformed layer. Shared
//! by the editing canvas and the version diff.

use crate::components::designer::{edge_line::EdgeLine, node_box::NodeBox};
use crate::designer::scene::Scene;
use leptos::prelude::*;

#[component]
pub fn SceneView(
    scene: Signal<Scene>,
    #[prop(optional)] on_node: Option<Callback<String>>,
    #[prop(optional)] on_edge: Option<Callback<(String, String)>>,
) -> impl IntoView {
    let edge_keys = move || scene.with(|s| s.edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect::<Vec<_>>());
    let node_keys = move || scene.with(|s| s.nodes.iter().map(|n| n.id.clone()).collect::<Vec<_>>());
    view! {
        <g class="edges">
            <For each=edge_keys key=|k| k.clone() let:k>
                <EdgeLine scene=scene from=k.0 to=k.1 on_choose=on_edge.unwrap_or(Callback::new(|_| ())) />
            </For>
        </g>
        <g class="nodes">
            <For each=node_keys key=|id| id.clone() let:id>
                <NodeBox scene=scene id=id on_choose=on_node.unwrap_or(Callback::new(|_| ())) />
            </For>
        </g>
    }
}
