//! Two versions on one read-only canvas: added, removed and changed nodes and edges coloured.

use crate::components::designer::node_box::NodeBox;
use crate::components::designer::state::Designer;
use crate::components::scene::scene_svg::{Camera, SceneSvg};
use crate::designer::scene;
use leptos::prelude::*;

#[component]
pub fn DiffCanvas() -> impl IntoView {
    let d = expect_context::<Designer>();
    let scene =
        Memo::new(move |_| d.diff.with(|x| x.as_ref().map(|x| scene::diff(&x.before, &x.after)).unwrap_or_default()));
    view! {
        <SceneSvg
            scene=scene.into()
            camera=Camera::Fit { width: 900.0, height: 600.0, margin: 40.0 }
            node=|id, shape| view! { <NodeBox id=id shape=shape /> }
            {..} class="canvas diff" data-testid="diff-canvas" aria-label="Version diff"
        />
    }
}
