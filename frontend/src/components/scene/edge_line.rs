//! One edge of a scene: the curve, a wider invisible stroke that is easier to click, and the
//! `when` label unless it is the default.

use crate::components::scene::scene_svg::ARROW;
use crate::designer::scene::{EdgeShape, Scene};
use leptos::prelude::*;

#[component]
pub fn EdgeLine(
    scene: Signal<Scene>,
    from: String,
    to: String,
    #[prop(optional)] on_choose: Option<Callback<(String, String)>>,
) -> impl IntoView {
    let (f, t) = (from.clone(), to.clone());
    let shape = Memo::new(move |_| scene.with(|s| s.edge(&f, &t).cloned()));
    let get = move |g: fn(&EdgeShape) -> String| shape.with(|s| s.as_ref().map(g).unwrap_or_default());
    let pair = (from.clone(), to.clone());
    let on_pointerdown = move |ev: leptos::ev::PointerEvent| {
        if let Some(cb) = on_choose {
            ev.stop_propagation();
            cb.run(pair.clone());
        }
    };
    view! {
        <g class=move || format!("edge {}", get(|s| s.class.clone())) data-testid=format!("edge-{from}-{to}")>
            <path class="edge-hit" d=move || get(|s| s.path.clone()) on:pointerdown=on_pointerdown />
            <path class="edge-line" d=move || get(|s| s.path.clone()) marker-end=format!("url(#{ARROW})") />
            {move || {
                shape.with(|s| s.as_ref().and_then(|s| s.label.clone().map(|l| (l, s.label_at)))).map(|(label, at)| {
                    view! {
                        <text class="edge-label" x=at.x y=at.y - 6.0 text-anchor="middle">{label}</text>
                    }
                })
            }}
        </g>
    }
}
