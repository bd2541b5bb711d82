//! The SVG a scene is drawn in, for the editing canvas, the version diff and the run graph: the
//! one arrow-head marker edges end in, and the world layer placed by the [`Camera`].

use crate::components::scene::scene_view::SceneView;
use crate::designer::geometry::Viewport;
use crate::designer::scene::{self, NodeShape, Scene};
use leptos::prelude::*;

/// The id of the arrow-head marker; edges end in `url(#ARROW)`.
pub const ARROW: &str = "arrow";

/// Where the world sits in the SVG.
#[derive(Clone, Copy)]
pub enum Camera {
    /// The editing canvas: a viewport the user pans and zooms; the SVG draws at its CSS size.
    Follow(Signal<Viewport>),
    /// A read-only view: the whole scene fitted into a `width`×`height` drawing (the `viewBox`,
    /// which CSS scales), `margin` drawing units around it.
    Fit { width: f64, height: f64, margin: f64 },
}

/// Draws `scene` with `node` drawing each node box, `children` (overlays) on top, in world units.
/// Attributes spread onto the component (`{..} class=… data-testid=…`, `on:…`) land on the `<svg>`.
#[component]
pub fn SceneSvg<F, V>(
    scene: Signal<Scene>,
    camera: Camera,
    /// Draws one node from its id and its shape in the scene.
    node: F,
    /// Called when an edge is chosen with the pointer; without it edges do not take the pointer.
    #[prop(optional)]
    on_edge: Option<Callback<(String, String)>>,
    #[prop(optional)] node_ref: NodeRef<leptos::svg::Svg>,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView
where
    F: Fn(String, Memo<Option<NodeShape>>) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let (view_box, viewport) = match camera {
        Camera::Follow(view) => (None, view),
        Camera::Fit { width, height, margin } => (
            Some(format!("0 0 {width} {height}")),
            Signal::derive(move || scene.with(|s| scene::fit(s, width, height, margin))),
        ),
    };
    view! {
        <svg node_ref=node_ref viewBox=view_box>
            <defs>
                <marker id=ARROW viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse">
                    <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
                </marker>
            </defs>
            <g class="world" transform=move || viewport.get().transform()>
                <SceneView scene=scene node=node on_edge=on_edge />
                {children.map(|overlays| overlays())}
            </g>
        </svg>
    }
}
