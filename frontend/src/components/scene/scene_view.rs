//! A scene's edges and nodes, keyed so a change redraws only what changed. The edges are the same
//! everywhere; each view draws its own node boxes through `node`.

use crate::components::scene::edge_line::EdgeLine;
use crate::designer::scene::{NodeShape, Scene};
use leptos::prelude::*;

#[component]
pub fn SceneView<F, V>(
    scene: Signal<Scene>,
    /// Draws one node from its id and its shape in the scene.
    node: F,
    on_edge: Option<Callback<(String, String)>>,
) -> impl IntoView
where
    F: Fn(String, Memo<Option<NodeShape>>) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let edge_keys = move || scene.with(|s| s.edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect::<Vec<_>>());
    let node_keys = move || scene.with(|s| s.nodes.iter().map(|n| n.id.clone()).collect::<Vec<_>>());
    let draw_node = move |id: String| {
        let key = id.clone();
        let shape = Memo::new(move |_| scene.with(|s| s.node(&key).cloned()));
        node(id, shape)
    };
    view! {
        <g class="edges">
            <For each=edge_keys key=|k| k.clone() let:k>
                <EdgeLine scene=scene from=k.0 to=k.1 nostrip:on_choose=on_edge />
            </For>
        </g>
        <g class="nodes">
            <For each=node_keys key=|id| id.clone() children=draw_node />
        </g>
    }
}
