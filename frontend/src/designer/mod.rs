//! The designer's logic as plain Rust, native-tested; the components in `components/designer/`
//! only turn browser events into calls here and draw what these modules compute.
//!
//! * [`geometry`]: world/screen coordinates, viewport pan and zoom, ports, hit testing, fit.
//! * [`history`]: the undo/redo stack (snapshots, coalescing typing and drags).
//! * [`keys`]: keyboard shortcuts.
//! * [`editor`]: the draft, the selection and every [`editor::Edit`] applied to them.
//! * [`board`]: pointer gestures on the canvas (move, connect, pan, rubber band, palette drop).
//! * [`connect`]: whether an edge may be drawn, naming the cycle it would close.
//! * [`layout`]: layered left-to-right auto-layout.
//! * [`diff`]: what changed between two versions, node by node and field by field.
//! * [`forms`]: the side panel's fields per node type and how their text maps to JSON.
//! * [`issues`]: validation problems placed on nodes, edges and fields.
//! * [`preview`]: expression preview with the engine's evaluator settings.
//! * [`scene`]: the shapes the canvas draws, for editing and for a version diff.
//! * [`secret_names`]: secret names suggested while a `{{ secret.… }}` template is typed.

pub mod board;
pub mod code;
pub mod connect;
pub mod diff;
pub mod editor;
pub mod forms;
pub mod geometry;
pub mod history;
pub mod issues;
pub mod keys;
pub mod layout;
pub mod map_form;
pub mod preview;
pub mod scene;
pub mod secret_names;

/// A definition from its JSON, for the modules' tests.
#[cfg(test)]
pub(crate) fn definition(json: serde_json::Value) -> trellis_model::Definition {
    serde_json::from_value(json).expect("a definition")
}

/// A graph of `noop` nodes, for the modules' tests.
#[cfg(test)]
pub(crate) fn noop_graph(ids: &[&str], edges: &[(&str, &str)]) -> trellis_model::Definition {
    use trellis_model::{Definition, Edge, Node};
    Definition {
        nodes: ids.iter().map(|id| Node::new(*id, "noop")).collect(),
        edges: edges.iter().map(|(a, b)| Edge::new(*a, *b)).collect(),
        ..Default::default()
    }
}
