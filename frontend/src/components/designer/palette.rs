//! The node types to place: drag one onto the canvas, or press it (mouse or keyboard) to add it
//! in the middle of the view.

use crate::components::designer::canvas::canvas_size;
use crate::components::designer::state::{Designer, Tab};
use crate::designer::scene::icon;
use leptos::prelude::*;
use trellis_model::config::NodeKind;
use trellis_model::node_types::PaletteGroup;

#[component]
pub fn Palette(svg: NodeRef<leptos::svg::Svg>) -> impl IntoView {
    let d = expect_context::<Designer>();
    let item = move |kind: NodeKind| {
        let name = kind.as_str();
        let on_pointerdown = move |ev: leptos::ev::PointerEvent| {
            if ev.button() == 0 {
                d.board.update(|b| b.pick(name));
            }
        };
        let on_click = move |_| {
            let (w, h) = canvas_size(&svg);
            d.board.update(|b| b.add_at_centre(name, w, h));
            d.tab.set(Tab::Node);
        };
        view! {
            <li>
                <button
                    type="button"
                    class="palette-item"
                    data-testid=format!("palette-{name}")
                    title=kind.description()
                    on:pointerdown=on_pointerdown
                    on:click=on_click
                >
                    <span class="palette-icon" aria-hidden="true">{icon(name)}</span>
                    <span class="palette-name">{name}</span>
                    <span class="palette-description">{kind.description()}</span>
                </button>
            </li>
        }
    };
    // One list per group of the node-type table, in the table's order within it.
    let groups = PaletteGroup::ALL.map(|group| {
        let kinds = NodeKind::ALL.into_iter().filter(move |k| k.spec().group == group);
        let heading = format!("palette-group-{}", group.label().to_lowercase());
        view! {
            <h3 class="palette-group" id=heading.clone()>{group.label()}</h3>
            <ul aria-labelledby=heading>{kinds.map(item).collect_view()}</ul>
        }
    });
    view! {
        <aside class="palette" aria-label="Node types">
            <h2>"Nodes"</h2>
            <p class="hint">"Drag onto the canvas, or press to add."</p>
            {groups.into_iter().collect_view()}
        </aside>
    }
}
