//! The run graph's camera: the designer's viewport (pan, wheel zoom, fit) on a read-only graph.
//! A graph too big to read when fitted (a 500-node chain) opens at a readable zoom on its
//! start instead; "Fit" still shows it all.

use crate::designer::geometry::{self, Point, Rect, Viewport, MAX_ZOOM, MIN_ZOOM, NODE_W};
use crate::designer::scene::{self, Scene};
use std::collections::HashSet;

/// Room around the graph, in pixels.
pub const MARGIN: f64 = 30.0;
/// The smallest zoom the graph opens at: node names still read at it.
pub const READABLE: f64 = 0.6;

/// The view the graph opens with in a `width`×`height` box: all of it when that reads, else
/// the first nodes (left, vertically centred when the graph is that short) at [`READABLE`].
pub fn opening(scene: &Scene, width: f64, height: f64) -> Viewport {
    let fitted = scene::fit(scene, width, height, MARGIN);
    let Some(b) = geometry::bounds(scene.nodes.iter().map(|n| n.at)) else { return fitted };
    if fitted.zoom >= READABLE {
        return fitted;
    }
    let zoom = READABLE;
    let y =
        if b.h * zoom + 2.0 * MARGIN <= height { height / 2.0 - (b.y + b.h / 2.0) * zoom } else { MARGIN - b.y * zoom };
    Viewport { zoom, pan: Point::new(MARGIN - b.x * zoom, y) }
}

/// The part of `scene` in view in a `width`×`height` box (with a node's width of room around
/// it, so a short pan does not show blanks first): its nodes, and the edges with an end among
/// them. A 500-node chain draws the dozen nodes on screen rather than all of them. Before the
/// box is measured (`width` 0) nothing is in view.
pub fn visible(scene: &Scene, view: Viewport, width: f64, height: f64) -> Scene {
    let from = view.to_world(Point::new(-NODE_W * view.zoom, -NODE_W * view.zoom));
    let to = view.to_world(Point::new(width + NODE_W * view.zoom, height + NODE_W * view.zoom));
    let shown = Rect::spanning(from, to);
    if width <= 0.0 || height <= 0.0 {
        return Scene::default();
    }
    let nodes: Vec<_> = scene.nodes.iter().filter(|n| geometry::node_rect(n.at).intersects(&shown)).cloned().collect();
    let kept: HashSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    let edges = scene.edges.iter().filter(|e| kept.contains(e.from.as_str()) || kept.contains(e.to.as_str())).cloned();
    Scene { edges: edges.collect(), nodes }
}

/// Zooms by `factor` around the middle of a `width`×`height` box (the + and − buttons).
pub fn zoom_centre(view: Viewport, factor: f64, width: f64, height: f64) -> Viewport {
    view.zoom_at(Point::new(width / 2.0, height / 2.0), factor)
}

/// A pan under way: where the pointer went down and where the view was then.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drag {
    pub from: Point,
    pub view: Viewport,
}

impl Drag {
    /// The view with the graph moved as far as the pointer has.
    pub fn to(&self, at: Point) -> Viewport {
        let pan = Point::new(self.view.pan.x + at.x - self.from.x, self.view.pan.y + at.y - self.from.y);
        Viewport { pan, ..self.view }
    }
}

/// Whether the zoom may go further that way (the buttons grey out at the ends).
pub fn can_zoom(view: Viewport, inwards: bool) -> bool {
    if inwards {
        view.zoom < MAX_ZOOM
    } else {
        view.zoom > MIN_ZOOM
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::noop_graph;
    use crate::run::graph;
    use crate::run::RunState;

    fn chain(n: usize) -> Scene {
        let ids: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let edges: Vec<(&str, &str)> = refs.windows(2).map(|w| (w[0], w[1])).collect();
        graph::scene(&graph::placed(&noop_graph(&refs, &edges)), &RunState::default())
    }

    #[test]
    fn a_small_graph_opens_fitted_and_a_long_one_readable_at_its_start() {
        let small = chain(3);
        assert_eq!(opening(&small, 640.0, 420.0), scene::fit(&small, 640.0, 420.0, MARGIN));
        let long = chain(500);
        let view = opening(&long, 640.0, 420.0);
        assert_eq!(view.zoom, READABLE);
        let first = long.node("n0").unwrap().at;
        let on_screen = view.to_screen(first);
        assert!((on_screen.x - MARGIN).abs() < 1e-6, "the first node at the left edge: {on_screen:?}");
        assert!(on_screen.y >= 0.0 && on_screen.y < 420.0);
        assert!(scene::fit(&long, 640.0, 420.0, MARGIN).zoom < READABLE, "fitted, it would not read");
    }

    #[test]
    fn only_what_is_in_view_is_drawn() {
        let long = chain(500);
        let view = opening(&long, 640.0, 420.0);
        let seen = visible(&long, view, 640.0, 420.0);
        assert!(seen.node("n0").is_some() && seen.node("n499").is_none());
        assert!(seen.nodes.len() > 2 && seen.nodes.len() < 20, "{} nodes", seen.nodes.len());
        let last = seen.nodes.iter().map(|n| n.id.clone()).max_by_key(|id| id[1..].parse::<u32>().unwrap()).unwrap();
        assert!(
            seen.edge(&last, &format!("n{}", last[1..].parse::<u32>().unwrap() + 1)).is_some(),
            "the edge out of view's last node"
        );
        let small = chain(3);
        assert_eq!(
            visible(&small, opening(&small, 640.0, 420.0), 640.0, 420.0),
            small,
            "a graph in view is drawn whole"
        );
        assert!(visible(&small, Viewport::default(), 0.0, 0.0).nodes.is_empty(), "nothing before the box is measured");
    }

    #[test]
    fn dragging_pans_by_the_pointers_travel_and_zoom_stops_at_its_ends() {
        let drag = Drag { from: Point::new(100.0, 100.0), view: Viewport { pan: Point::new(5.0, 6.0), zoom: 0.8 } };
        let moved = drag.to(Point::new(130.0, 90.0));
        assert_eq!((moved.pan, moved.zoom), (Point::new(35.0, -4.0), 0.8));
        let view = zoom_centre(Viewport::default(), 1.25, 640.0, 420.0);
        assert!((view.zoom - 1.25).abs() < 1e-9);
        assert!(can_zoom(view, true) && can_zoom(view, false));
        assert!(!can_zoom(Viewport { zoom: MIN_ZOOM, ..view }, false));
        assert!(!can_zoom(Viewport { zoom: MAX_ZOOM, ..view }, true));
    }
}
