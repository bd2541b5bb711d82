//! One node on the designer's canvas (and in a version diff): the shared box with the node's type
//! under its title, a problem mark, and the two ports edges attach to.

use crate::components::scene::node_frame::{shape_text, NodeFrame};
use crate::designer::geometry::{NODE_H, NODE_W};
use crate::designer::scene::NodeShape;
use leptos::prelude::*;

#[component]
pub fn NodeBox(
    id: String,
    shape: Memo<Option<NodeShape>>,
    /// Called when the node is chosen from the keyboard (Enter or Space while focused).
    #[prop(optional)]
    on_choose: Option<Callback<String>>,
) -> impl IntoView {
    let chosen = id.clone();
    // Enter and Space are a focused node's keys even where choosing does nothing (in a diff).
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" || ev.key() == " " {
            ev.prevent_default();
            if let Some(cb) = on_choose {
                cb.run(chosen.clone());
            }
        }
    };
    let (test_id, port_in, port_out) = (format!("node-{id}"), format!("port-in-{id}"), format!("port-out-{id}"));
    let kind = move || shape_text(shape, |s| s.kind.clone());
    let problems = move || shape.with(|s| s.as_ref().and_then(|s| s.problems.clone()));
    // The mark's text for everyone: a tooltip on hover, and in the node's accessible name.
    let problem = move || {
        problems().map(|p| {
            view! {
                <text class="node-problem" x=NODE_W - 18.0 y="20" data-problem=p.clone() aria-hidden="true">
                    <title>{format!("Problem: {p}")}</title>
                    "!"
                </text>
            }
        })
    };
    view! {
        <NodeFrame
            shape=shape
            subtitle=Signal::derive(kind)
            subtitle_class="node-kind"
            {..}
            on:keydown=on_keydown
            data-testid=test_id
            data-kind=kind
            // Named by what it shows (title, then type), so speech input finds it by what is
            // seen; the whole of a clipped title is in the title's own `<title>`.
            role="button"
        >
            {problem}
            <circle class="port port-in" cx="0" cy=NODE_H / 2.0 r="6" data-testid=port_in />
            <circle class="port port-out" cx=NODE_W cy=NODE_H / 2.0 r="6" data-testid=port_out />
        </NodeFrame>
    }
}
