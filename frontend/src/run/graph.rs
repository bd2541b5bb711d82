//! The workflow of a run, drawn read-only with the designer's scene code: each node classed by
//! its status in the run. A definition saved without positions (made through the API) is laid
//! out with the designer's auto-layout.

use crate::designer::geometry::Point;
use crate::designer::layout;
use crate::designer::scene::{self, Scene};
use crate::run::RunState;
use trellis_model::definition::Position;
use trellis_model::{Definition, NodeStatus};

/// The definition with every node placed: its own positions, or an auto-layout when any
/// node has none.
pub fn placed(def: &Definition) -> Definition {
    if def.nodes.iter().all(|n| n.position.is_some()) {
        return def.clone();
    }
    let at = layout::layered(def, Point::new(0.0, 0.0));
    let mut def = def.clone();
    for n in &mut def.nodes {
        if let Some(p) = at.get(&n.id) {
            n.position = Some(Position { x: p.x, y: p.y });
        }
    }
    def
}

/// The scene of `def` (already [`placed`]) with each node's run status as a class: `run-<status>`.
pub fn scene(def: &Definition, state: &RunState) -> Scene {
    scene::read_only(def, |id| format!("run run-{}", state.node_status(id)))
}

/// The legend of the status colours: each status's class and its name to read, in the model's
/// order. `ready` (admitted, waiting for a slot) has no colour of its own, so it is left out.
pub fn legend() -> Vec<(String, String)> {
    NodeStatus::ALL
        .iter()
        .filter(|s| **s != NodeStatus::Ready)
        .map(|s| (format!("run-{s}"), s.as_str().replace('_', " ")))
        .collect()
}
