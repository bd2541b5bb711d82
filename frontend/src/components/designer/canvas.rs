//! The editing canvas: an SVG whose pointer events drive `Board` (move, connect, pan, rubber
//! band, palette drop, wheel zoom) and which draws the board's scene and gesture overlays.

use crate::components::designer::node_box::NodeBox;
use crate::components::designer::state::Designer;
use crate::components::scene::scene_svg::{Camera, SceneSvg};
use crate::designer::board::{Board, Gesture};
use crate::designer::geometry::{Point, NODE_H, NODE_W};
use crate::designer::scene;
use leptos::ev;
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;

/// Canvas size in CSS pixels, for fit-to-view and placing from the keyboard.
pub fn canvas_size(svg: &NodeRef<leptos::svg::Svg>) -> (f64, f64) {
    svg.get_untracked()
        .map(|el| {
            let rect = el.unchecked_ref::<web_sys::Element>().get_bounding_client_rect();
            (rect.width(), rect.height())
        })
        .unwrap_or((1000.0, 600.0))
}

/// Fits the whole draft into the canvas (on arrival, with the Fit button and the `0` key).
pub fn fit_to_canvas(board: RwSignal<Board>, svg: NodeRef<leptos::svg::Svg>) {
    let (w, h) = canvas_size(&svg);
    board.update(|b| b.fit(w, h));
}

#[component]
pub fn Canvas(svg: NodeRef<leptos::svg::Svg>) -> impl IntoView {
    let d = expect_context::<Designer>();
    let board = d.board;
    let scene = Memo::new(move |_| {
        let issues = d.issues.get();
        board.with(|b| scene::editing(b, &issues))
    });

    // The pointer relative to the canvas, and whether it is over it.
    let local = move |ev: &web_sys::MouseEvent| -> (Point, bool) {
        let Some(el) = svg.get_untracked() else { return (Point::default(), false) };
        let rect = el.unchecked_ref::<web_sys::Element>().get_bounding_client_rect();
        let p = Point::new(f64::from(ev.client_x()) - rect.left(), f64::from(ev.client_y()) - rect.top());
        let inside = p.x >= 0.0 && p.y >= 0.0 && p.x <= rect.width() && p.y <= rect.height();
        (p, inside)
    };
    let placing = move || board.with_untracked(|b| matches!(b.gesture, Gesture::Place { .. }));
    let idle = move || board.with_untracked(|b| b.gesture == Gesture::Idle);
    let finish = move || {
        let mut message = None;
        board.update(|b| message = b.release());
        if message.is_some() {
            d.notice.set(message);
        }
    };

    let on_pointerdown = move |ev: ev::PointerEvent| {
        if ev.button() != 0 {
            return;
        }
        ev.prevent_default();
        if let Some(el) = svg.get_untracked() {
            let el: &web_sys::Element = el.unchecked_ref();
            let _ = el.set_pointer_capture(ev.pointer_id());
            if let Some(html) = el.dyn_ref::<web_sys::SvgElement>() {
                let _ = html.focus();
            }
        }
        let (p, _) = local(&ev);
        d.notice.set(None);
        board.update(|b| b.press(p, ev.shift_key()));
    };
    let on_pointermove = move |ev: ev::PointerEvent| {
        if idle() || placing() {
            return;
        }
        let (p, _) = local(&ev);
        board.update(|b| b.drag(p));
    };
    let on_pointerup = move |_: ev::PointerEvent| {
        if !idle() && !placing() {
            finish();
        }
    };
    let on_wheel = move |ev: ev::WheelEvent| {
        ev.prevent_default();
        let (p, _) = local(&ev);
        board.update(|b| b.wheel(p, ev.delta_y()));
    };

    // Dragging from the palette starts outside the canvas, so follow the pointer on the window.
    let moves = window_event_listener(ev::pointermove, move |ev| {
        if placing() {
            let (p, inside) = local(&ev);
            board.update(|b| if inside { b.drag(p) } else { b.leave() });
        }
    });
    let ups = window_event_listener(ev::pointerup, move |_| {
        if placing() {
            finish();
        }
    });
    on_cleanup(move || {
        moves.remove();
        ups.remove();
    });

    let choose_node = Callback::new(move |id: String| board.update(|b| b.editor.select_only(&id)));
    let choose_edge = Callback::new(move |(from, to): (String, String)| {
        board.update(|b| b.editor.select_edge(&from, &to));
        d.tab.set(crate::components::designer::state::Tab::Node);
    });
    view! {
        <SceneSvg
            scene=scene.into()
            camera=Camera::Follow(Signal::derive(move || board.with(|b| b.view)))
            node_ref=svg
            on_edge=choose_edge
            node=move |id, shape| view! { <NodeBox id=id shape=shape on_choose=choose_node /> }
            {..}
            class="canvas"
            data-testid="canvas"
            tabindex="0"
            role="application"
            aria-label="Workflow canvas"
            on:pointerdown=on_pointerdown
            on:pointermove=on_pointermove
            on:pointerup=on_pointerup
            on:pointercancel=on_pointerup
            on:wheel=on_wheel
        >
            <GestureOverlays />
        </SceneSvg>
    }
}

/// What a gesture draws over the scene: the rubber band, the edge being connected (refused in
/// red), and the ghost of a node dragged from the palette.
#[component]
fn GestureOverlays() -> impl IntoView {
    let board = expect_context::<Designer>().board;
    let band = move || {
        board.with(|b| b.band()).map(|r| {
            view! { <rect class="band" x=r.x y=r.y width=r.w height=r.h data-testid="rubber-band" /> }
        })
    };
    let pending = move || {
        board.with(scene::pending_edge).map(|(path, refused)| {
            view! { <path class=if refused { "pending refused" } else { "pending" } d=path /> }
        })
    };
    let ghost = move || {
        board
            .with(|b| match &b.gesture {
                Gesture::Place { at: Some(at), .. } => Some(*at),
                _ => None,
            })
            .map(|at| {
                view! {
                    <rect class="ghost" x=at.x - NODE_W / 2.0 y=at.y - NODE_H / 2.0 width=NODE_W height=NODE_H rx="8" />
                }
            })
    };
    view! {
        {pending}
        {band}
        {ghost}
    }
}
