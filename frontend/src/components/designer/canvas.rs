//! The editing canvas: an SVG whose pointer events drive `Board` (move, connect, pan, rubber
//! band, palette drop, wheel zoom) and which draws the board's scene and gesture overlays.

use crate::components::designer::gesture_overlays::GestureOverlays;
use crate::components::designer::node_box::NodeBox;
use crate::components::designer::state::Designer;
use crate::components::scene::scene_svg::{Camera, SceneSvg};
use crate::designer::board::{Board, Gesture};
use crate::designer::geometry::Point;
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

    let local = move |ev: &web_sys::MouseEvent| pointer_at(svg, ev);
    // A gesture under way on the canvas itself (a palette drop is followed on the window).
    let dragging = move || board.with_untracked(|b| b.gesture != Gesture::Idle) && !placing(board);

    let on_pointerdown = move |ev: ev::PointerEvent| {
        if ev.button() != 0 {
            return;
        }
        ev.prevent_default();
        capture_pointer(svg, &ev);
        let (p, _) = local(&ev);
        d.notice.set(None);
        board.update(|b| b.press(p, ev.shift_key()));
    };
    let on_pointermove = move |ev: ev::PointerEvent| {
        if dragging() {
            let (p, _) = local(&ev);
            board.update(|b| b.drag(p));
        }
    };
    let on_pointerup = move |_: ev::PointerEvent| {
        if dragging() {
            release(d);
        }
    };
    let on_wheel = move |ev: ev::WheelEvent| {
        ev.prevent_default();
        let (p, _) = local(&ev);
        board.update(|b| b.wheel(p, ev.delta_y()));
    };

    follow_palette_drag(d, svg);

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

/// The pointer relative to the canvas, and whether it is over it.
pub fn pointer_at(svg: NodeRef<leptos::svg::Svg>, ev: &web_sys::MouseEvent) -> (Point, bool) {
    let Some(el) = svg.get_untracked() else { return (Point::default(), false) };
    let rect = el.unchecked_ref::<web_sys::Element>().get_bounding_client_rect();
    let p = Point::new(f64::from(ev.client_x()) - rect.left(), f64::from(ev.client_y()) - rect.top());
    let inside = p.x >= 0.0 && p.y >= 0.0 && p.x <= rect.width() && p.y <= rect.height();
    (p, inside)
}

/// Keeps the pointer's events on the canvas for the gesture it starts, and the keyboard there.
fn capture_pointer(svg: NodeRef<leptos::svg::Svg>, ev: &ev::PointerEvent) {
    if let Some(el) = svg.get_untracked() {
        let el: &web_sys::Element = el.unchecked_ref();
        let _ = el.set_pointer_capture(ev.pointer_id());
        if let Some(html) = el.dyn_ref::<web_sys::SvgElement>() {
            let _ = html.focus();
        }
    }
}

/// Whether a node dragged from the palette is being placed.
fn placing(board: RwSignal<Board>) -> bool {
    board.with_untracked(|b| matches!(b.gesture, Gesture::Place { .. }))
}

/// Ends the gesture, saying why when the board refused it.
fn release(d: Designer) {
    let mut message = None;
    d.board.update(|b| message = b.release());
    if message.is_some() {
        d.notice.set(message);
    }
}

/// Dragging from the palette starts outside the canvas, so the pointer is followed on the window
/// while a node is being placed.
fn follow_palette_drag(d: Designer, svg: NodeRef<leptos::svg::Svg>) {
    let board = d.board;
    let moves = window_event_listener(ev::pointermove, move |ev| {
        if placing(board) {
            let (p, inside) = pointer_at(svg, &ev);
            board.update(|b| if inside { b.drag(p) } else { b.leave() });
        }
    });
    let ups = window_event_listener(ev::pointerup, move |_| {
        if placing(board) {
            release(d);
        }
    });
    on_cleanup(move || {
        moves.remove();
        ups.remove();
    });
}
