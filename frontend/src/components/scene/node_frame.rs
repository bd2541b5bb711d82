//! What every view draws of a node: the box at the node's place, classed by the scene, with its
//! icon, title and a line under the title (the designer: the type; the run view: the status).
//! A view spreads its own attributes onto it (`{..} data-testid=… role=… aria-label=…`, `on:…`)
//! and adds its extras (ports, a problem mark) as children. A title too long for the box is cut
//! with an ellipsis; the whole title is the title text's `<title>` (shown on hover, and part of
//! the node's name, which always holds what is seen).

use crate::designer::geometry::{clip_label, NODE_H, NODE_W, TITLE_CHARS};
use crate::designer::scene::NodeShape;
use leptos::prelude::*;

/// A text of the node's shape, empty while the node is not in the scene.
pub fn shape_text(shape: Memo<Option<NodeShape>>, text: fn(&NodeShape) -> String) -> String {
    shape.with(|s| s.as_ref().map(text).unwrap_or_default())
}

#[component]
pub fn NodeFrame(
    shape: Memo<Option<NodeShape>>,
    /// The line under the title.
    #[prop(into)]
    subtitle: Signal<String>,
    /// The classes of that line.
    subtitle_class: &'static str,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    view! {
        <g
            class=move || format!("node {}", shape_text(shape, |s| s.class.clone()))
            transform=move || shape_text(shape, |s| format!("translate({} {})", s.at.x, s.at.y))
            tabindex="0"
        >
            <rect class="node-box" width=NODE_W height=NODE_H rx="8" />
            <text class="node-icon" x="16" y="35" aria-hidden="true">{move || shape.with(|s| s.as_ref().map(|s| s.icon))}</text>
            <text class="node-title" x="42" y="24">
                <title>{move || shape_text(shape, |s| s.title.clone())}</title>
                {move || shape_text(shape, |s| clip_label(&s.title, TITLE_CHARS))}
            </text>
            <text class=subtitle_class x="42" y="43">{move || subtitle.get()}</text>
            {children.map(|extras| extras())}
        </g>
    }
}
