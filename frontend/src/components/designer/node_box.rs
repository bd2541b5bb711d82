//! One node on the canvas: its box, icon, title, type and the two ports edges attach to.

use crate::designer::geometry::{NODE_H, NODE_W};
use crate::designer::scene::{NodeShape, Scene};
use leptos::prelude::*;

#[component]
pub fn NodeBox(
    scene: Signal<Scene>,
    id: String,
    /// Called when the node is chosen from the keyboard (Enter or Space while focused).
    #[prop(optional)]
    on_choose: Option<Callback<String>>,
) -> impl IntoView {
    let key = id.clone();
    let shape = Memo::new(move |_| scene.with(|s| s.node(&key).cloned()));
    let get = move |f: fn(&NodeShape) -> String| shape.with(|s| s.as_ref().map(f).unwrap_or_default());
    let chosen = id.clone();
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if let Some(cb) = on_choose {
            if ev.key() == "Enter" || ev.key() == " " {
                ev.prevent_default();
                cb.run(chosen.clone());
            }
        }
    };
    view! {
        <g
            class=move || format!("node {}", get(|s| s.class.clone()))
            transform=move || get(|s| format!("translate({} {})", s.at.x, s.at.y))
            data-testid=format!("node-{id}")
            data-kind=move || get(|s| s.kind.clone())
            tabindex="0"
            role="button"
            aria-label=move || get(|s| format!("{} node {}", s.kind, s.title))
            on:keydown=on_keydown
        >
            <rect class="node-box" width=NODE_W height=NODE_H rx="8" />
            <text class="node-icon" x="16" y="35">{move || shape.with(|s| s.as_ref().map(|s| s.icon))}</text>
            <text class="node-title" x="42" y="24">{move || get(|s| s.title.clone())}</text>
            <text class="node-kind" x="42" y="43">{move || get(|s| s.kind.clone())}</text>
            {move || {
                shape.with(|s| s.as_ref().and_then(|s| s.problems.clone())).map(|p| {
                    view! {
                        <text class="node-problem" x=NODE_W - 18.0 y="20" data-problem=p>"!"</text>
                    }
                })
            }}
            <circle class="port port-in" cx="0" cy=NODE_H / 2.0 r="6" data-testid=format!("port-in-{id}") />
            <circle class="port port-out" cx=NODE_W cy=NODE_H / 2.0 r="6" data-testid=format!("port-out-{id}") />
        </g>
    }
}
