//! The graph drawing every view shares: the SVG frame ([`scene_svg::SceneSvg`]: the arrow head,
//! the world transform, fit-to-view), the edges and nodes of a `Scene` ([`scene_view::SceneView`],
//! which leaves the node boxes to the view), and the parts of a box every view draws
//! ([`node_frame::NodeFrame`]).

pub mod edge_line;
pub mod node_frame;
pub mod scene_svg;
pub mod scene_view;
