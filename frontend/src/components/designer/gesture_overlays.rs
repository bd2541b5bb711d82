//! What a gesture draws over the canvas's scene: the rubber band, the edge being connected
//! (refused in red), and the ghost of a node dragged from the palette.

use crate::components::designer::state::Designer;
use crate::designer::board::Gesture;
use crate::designer::geometry::{NODE_H, NODE_W};
use crate::designer::scene;
use leptos::prelude::*;

#[component]
pub fn GestureOverlays() -> impl IntoView {
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
