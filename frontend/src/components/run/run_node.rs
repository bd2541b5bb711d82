//! One node of the run graph: the designer's box with the node's status and attempt count in
//! place of its type. Focusable, and named with its status (and error) for screen readers.

use crate::components::run::state::RunView;
use crate::designer::geometry::{NODE_H, NODE_W};
use crate::designer::scene::{NodeShape, Scene};
use leptos::prelude::*;

#[component]
pub fn RunNode(scene: Signal<Scene>, id: String) -> impl IntoView {
    let v = expect_context::<RunView>();
    let key = id.clone();
    let shape = Memo::new(move |_| scene.with(|s| s.node(&key).cloned()));
    let get = move |f: fn(&NodeShape) -> String| shape.with(|s| s.as_ref().map(f).unwrap_or_default());
    let key = id.clone();
    let run = Memo::new(move |_| {
        v.run.with(|r| (r.node_status(&key).to_owned(), r.nodes.get(&key).map(|n| (n.attempt, n.error.clone()))))
    });
    let status = move || run.with(|(s, _)| s.clone());
    let label = move || {
        run.with(|(s, n)| match n {
            Some((a, _)) if *a > 1 => format!("{} · attempt {a}", s.replace('_', " ")),
            _ => s.replace('_', " "),
        })
    };
    let tooltip = move || run.with(|(_, n)| n.as_ref().and_then(|(_, e)| e.clone()));
    view! {
        <g
            class=move || format!("node {}", get(|s| s.class.clone()))
            transform=move || get(|s| format!("translate({} {})", s.at.x, s.at.y))
            data-testid=format!("run-node-{id}")
            data-status=status
            data-attempt=move || run.with(|(_, n)| n.as_ref().map_or(0, |(a, _)| *a).to_string())
            tabindex="0"
            role="img"
            aria-label=move || match tooltip() {
                Some(error) => format!("{}: {}, {error}", get(|s| s.title.clone()), label()),
                None => format!("{}: {}", get(|s| s.title.clone()), label()),
            }
        >
            <rect class="node-box" width=NODE_W height=NODE_H rx="8" />
            <text class="node-icon" x="16" y="35">{move || shape.with(|s| s.as_ref().map(|s| s.icon))}</text>
            <text class="node-title" x="42" y="24">{move || get(|s| s.title.clone())}</text>
            <text class="node-kind run-status" x="42" y="43">{label}</text>
        </g>
    }
}
