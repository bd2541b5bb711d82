//! The instance's version of the workflow, drawn read-only, each node coloured by its status in
//! the run, with the legend of those colours. It pans (drag) and zooms (wheel, buttons) like the
//! designer's canvas; it opens fitted, or readable at its start when fitting would not read.

use crate::components::designer::canvas::{canvas_size, pointer_at};
use crate::components::run::node_details::NodeDetails;
use crate::components::run::retry_from_here::RetryFromHere;
use crate::components::run::run_node::RunNode;
use crate::components::run::state::RunView;
use crate::components::scene::scene_svg::{Camera, SceneSvg};
use crate::designer::geometry::Viewport;
use crate::designer::scene;
use crate::run::camera::{self, Drag};
use crate::run::graph;
use leptos::ev;
use leptos::prelude::*;

#[component]
pub fn RunGraph() -> impl IntoView {
    let v = expect_context::<RunView>();
    let scene = Memo::new(move |_| {
        v.definition.with(|d| d.as_ref().map(|d| v.run.with(|r| graph::scene(d, r))).unwrap_or_default())
    });
    let svg = NodeRef::<leptos::svg::Svg>::new();
    let view = RwSignal::new(Viewport::default());
    // The box's size as last measured: only the nodes in view are drawn.
    let size = RwSignal::new((0.0, 0.0));
    let shown = Memo::new(move |_| {
        let (w, h) = size.get();
        scene.with(|s| camera::visible(s, view.get(), w, h))
    });
    let measure = move || {
        let (w, h) = canvas_size(&svg);
        size.set((w, h));
        (w, h)
    };
    let drag = StoredValue::new(None::<Drag>);
    // Placed when the graph arrives (and again when a retry moves it onto another version).
    let drawn = Memo::new(move |_| v.definition.with(|d| d.as_ref().map(|d| d.nodes.len())));
    // Until the reader pans or zooms, the graph keeps its opening view: placed once the page is
    // laid out (the next frame, when the box has its size), and again when the box changes size
    // (a phone turned, a window resized).
    let untouched = StoredValue::new(true);
    let open_view = move || {
        let (w, h) = measure();
        view.set(scene.with_untracked(|s| camera::opening(s, w, h)));
    };
    Effect::new(move |_| {
        if drawn.get().is_some() {
            untouched.set_value(true);
            open_view();
            request_animation_frame(move || {
                if untouched.get_value() {
                    open_view();
                }
            });
        }
    });
    // A wider window shows more of the graph: what is drawn follows the box's size.
    let resized = window_event_listener(ev::resize, move |_| {
        if untouched.get_value() {
            open_view();
        } else {
            measure();
        }
    });
    on_cleanup(move || resized.remove());
    let fit = move |_| {
        untouched.set_value(false);
        let (w, h) = measure();
        view.set(scene.with_untracked(|s| scene::fit(s, w, h, camera::MARGIN)));
    };
    let zoom = move |factor: f64| {
        untouched.set_value(false);
        let (w, h) = measure();
        view.update(|vw| *vw = camera::zoom_centre(*vw, factor, w, h));
    };
    let on_wheel = move |ev: ev::WheelEvent| {
        ev.prevent_default();
        untouched.set_value(false);
        let (p, _) = pointer_at(svg, &ev);
        view.update(|vw| *vw = vw.zoom_at(p, Viewport::wheel_factor(ev.delta_y())));
    };
    let down = move |ev: ev::PointerEvent| {
        let (from, _) = pointer_at(svg, &ev);
        drag.set_value(Some(Drag { from, view: view.get_untracked() }));
    };
    let moved = move |ev: ev::PointerEvent| {
        if let Some(d) = drag.get_value().filter(|_| ev.buttons() & 1 == 1) {
            untouched.set_value(false);
            view.set(d.to(pointer_at(svg, &ev).0));
        }
    };
    view! {
        <section class="run-graph" aria-label="Workflow graph">
            <div class="graph-tools" role="toolbar" aria-label="Graph view">
                <button type="button" aria-label="Zoom in" disabled=move || !camera::can_zoom(view.get(), true) on:click=move |_| zoom(1.25)>"+"</button>
                <button type="button" aria-label="Zoom out" disabled=move || !camera::can_zoom(view.get(), false) on:click=move |_| zoom(0.8)>"−"</button>
                <button type="button" data-testid="graph-fit" on:click=fit>"Fit"</button>
            </div>
            <SceneSvg
                scene=shown.into()
                camera=Camera::Follow(view.into())
                node_ref=svg
                node=|id, shape| view! { <RunNode id=id shape=shape /> }
                {..} class="canvas run" data-testid="run-graph" role="group" aria-label="Nodes by status"
                on:wheel=on_wheel on:pointerdown=down on:pointermove=moved on:pointerup=move |_| drag.set_value(None)
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
