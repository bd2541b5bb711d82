//! Two versions on one read-only canvas: added, removed and changed nodes and edges coloured.

use crate::components::designer::scene_view::SceneView;
use crate::components::designer::state::Designer;
use crate::designer::geometry::{self, Viewport};
use crate::designer::scene;
use leptos::prelude::*;

#[component]
pub fn DiffCanvas() -> impl IntoView {
    let d = expect_context::<Designer>();
    let scene =
        Memo::new(move |_| d.diff.with(|x| x.as_ref().map(|x| scene::diff(&x.before, &x.after)).unwrap_or_default()));
    let view_box = move || {
        scene
            .with(|s| geometry::bounds(s.nodes.iter().map(|n| n.at)))
            .map(|b| Viewport::fit(b, 900.0, 600.0, 40.0))
            .unwrap_or_default()
            .transform()
    };
    view! {
        <svg class="canvas diff" data-testid="diff-canvas" viewBox="0 0 900 600" aria-label="Version diff">
            <defs>
                <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse">
                    <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
                </marker>
            </defs>
            <g class="world" transform=view_box>
                <SceneView scene=scene.into() />
            </g>
        </svg>
    }
}
