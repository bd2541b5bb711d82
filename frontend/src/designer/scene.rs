//! What the canvas draws, computed from the editor (or from a version diff): node boxes with
//! their labels, icons and state classes, and edge curves with their `when` labels.

use crate::designer::board::{Board, Gesture};
use crate::designer::diff;
use crate::designer::editor::position_of;
use crate::designer::geometry::{self, Point, Viewport};
use crate::designer::issues::Placed;
use trellis_model::config::NodeKind;
use trellis_model::{Definition, EdgeWhen};

#[derive(Debug, Clone, PartialEq)]
pub struct NodeShape {
    pub id: String,
    pub title: String,
    pub kind: String,
    pub icon: &'static str,
    pub at: Point,
    /// Space-separated classes: `selected`, `invalid`, `refused`, `target`, or a diff change.
    pub class: String,
    /// Problems with the node, shown as its tooltip.
    pub problems: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EdgeShape {
    pub from: String,
    pub to: String,
    pub path: String,
    /// The `when` label, shown unless it is the default `success`.
    pub label: Option<String>,
    pub label_at: Point,
    pub class: String,
    pub problems: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scene {
    pub nodes: Vec<NodeShape>,
    pub edges: Vec<EdgeShape>,
}

impl Scene {
    pub fn node(&self, id: &str) -> Option<&NodeShape> {
        self.nodes.iter().find(|n| n.id == id)
    }

    pub fn edge(&self, from: &str, to: &str) -> Option<&EdgeShape> {
        self.edges.iter().find(|e| e.from == from && e.to == to)
    }
}

/// A short symbol for each node type, for the palette and the node boxes.
pub fn icon(kind: &str) -> &'static str {
    NodeKind::parse(kind).map_or("?", |k| k.spec().icon)
}

fn classes(parts: &[(&str, bool)]) -> String {
    parts.iter().filter(|(_, on)| *on).map(|(c, _)| *c).collect::<Vec<_>>().join(" ")
}

fn join(messages: Option<&Vec<String>>) -> Option<String> {
    messages.filter(|m| !m.is_empty()).map(|m| m.join("\n"))
}

/// Shapes for a definition; `node_class` and `edge_class` add state per id.
fn shapes(
    def: &Definition,
    node_class: impl Fn(&str) -> String,
    edge_class: impl Fn(&str, &str) -> String,
    issues: &Placed,
) -> Scene {
    let nodes: Vec<NodeShape> = def
        .nodes
        .iter()
        .map(|n| NodeShape {
            id: n.id.clone(),
            title: n.name.clone().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| n.id.clone()),
            kind: n.kind.clone(),
            icon: icon(&n.kind),
            at: position_of(n),
            class: node_class(&n.id),
            problems: join(issues.nodes.get(&n.id)),
        })
        .collect();
    let at = |id: &str| nodes.iter().find(|n| n.id == id).map(|n| n.at);
    let edges = def
        .edges
        .iter()
        .filter_map(|e| {
            let (from, to) = (geometry::output_port(at(&e.from)?), geometry::input_port(at(&e.to)?));
            let key = (e.from.clone(), e.to.clone());
            Some(EdgeShape {
                from: e.from.clone(),
                to: e.to.clone(),
                path: geometry::edge_path(from, to),
                label: (e.when != EdgeWhen::Success).then(|| e.when.as_str().to_owned()),
                label_at: geometry::edge_midpoint(from, to),
                class: edge_class(&e.from, &e.to),
                problems: join(issues.edges.get(&key)),
            })
        })
        .collect();
    Scene { nodes, edges }
}

/// The scene of the draft being edited.
pub fn editing(board: &Board, issues: &Placed) -> Scene {
    let editor = &board.editor;
    let refused = board.refusal.as_ref().map(|r| r.nodes()).unwrap_or_default();
    let target = match &board.gesture {
        Gesture::Connect { over: Some(t), .. } => Some(t.as_str()),
        _ => None,
    };
    shapes(
        &editor.doc,
        |id| {
            classes(&[
                ("selected", editor.selected.contains(id)),
                ("invalid", issues.nodes.contains_key(id)),
                ("refused", refused.iter().any(|r| r == id)),
                ("target", target == Some(id) && board.refusal.is_none()),
            ])
        },
        |from, to| {
            let key = (from.to_owned(), to.to_owned());
            classes(&[
                ("selected", editor.selected_edge.as_ref() == Some(&key)),
                ("invalid", issues.edges.contains_key(&key)),
            ])
        },
        issues,
    )
}

/// The scene of a version diff: the union of both versions, coloured by change.
pub fn diff(before: &Definition, after: &Definition) -> Scene {
    let d = diff::diff(before, after);
    let union = diff::union(before, after);
    shapes(
        &union,
        |id| d.node(id).class().to_owned(),
        |from, to| d.edge(from, to).class().to_owned(),
        &Placed::default(),
    )
}

/// A read-only scene (the run view): `node_class` gives each node's classes.
pub fn read_only(def: &Definition, node_class: impl Fn(&str) -> String) -> Scene {
    shapes(def, node_class, |_, _| String::new(), &Placed::default())
}

/// The viewport that shows all of `scene` in a `width`×`height` drawing with `margin` around it;
/// an empty scene stays where the world's origin is.
pub fn fit(scene: &Scene, width: f64, height: f64, margin: f64) -> Viewport {
    geometry::bounds(scene.nodes.iter().map(|n| n.at))
        .map(|b| Viewport::fit(b, width, height, margin))
        .unwrap_or_default()
}

/// The loose edge being drawn: from the source's output port to the pointer.
pub fn pending_edge(board: &Board) -> Option<(String, bool)> {
    match &board.gesture {
        Gesture::Connect { from, at, .. } => {
            let start = geometry::output_port(board.editor.position(from)?);
            Some((geometry::edge_path(start, *at), board.refusal.is_some()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::definition;
    use crate::designer::editor::{Edit, Editor};
    use serde_json::json;

    #[test]
    fn the_editing_scene_marks_selection_problems_and_labels() {
        let mut b = Board::new(Editor::new(Definition::default()));
        b.editor.apply(Edit::AddNode { kind: "branch".into(), at: Point::new(0.0, 0.0) }).unwrap();
        b.editor.apply(Edit::AddNode { kind: "noop".into(), at: Point::new(300.0, 0.0) }).unwrap();
        b.editor.apply(Edit::Connect { from: "branch_1".into(), to: "noop_1".into() }).unwrap();
        let report = trellis_model::validate(&b.editor.doc, &Default::default());
        let scene = editing(&b, &Placed::from_issues(&report.errors));
        let branch = scene.node("branch_1").unwrap();
        assert_eq!(branch.icon, "◇");
        assert!(branch.class.contains("invalid"), "a branch needs a condition");
        assert!(branch.problems.as_deref().unwrap().contains("condition"));
        let edge = scene.edge("branch_1", "noop_1").unwrap();
        assert_eq!(edge.label.as_deref(), Some("true"));
        assert!(edge.class.contains("selected"));
    }

    #[test]
    fn the_diff_scene_colours_changes() {
        let v1 = definition(json!({
            "nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "noop"}],
            "edges": [{"from": "a", "to": "b"}]
        }));
        let v2 = definition(json!({
            "nodes": [{"id": "a", "type": "noop", "name": "Start"}, {"id": "c", "type": "noop"}],
            "edges": [{"from": "a", "to": "c"}]
        }));
        let scene = diff(&v1, &v2);
        let class = |id: &str| scene.node(id).unwrap().class.clone();
        assert_eq!(class("a"), "changed");
        assert_eq!(class("b"), "removed");
        assert_eq!(class("c"), "added");
        assert_eq!(scene.edge("a", "b").unwrap().class, "removed");
        assert_eq!(scene.edge("a", "c").unwrap().class, "added");
    }

    #[test]
    fn fit_shows_the_whole_scene_and_leaves_an_empty_one_alone() {
        let scene = read_only(&crate::designer::noop_graph(&["a", "b"], &[("a", "b")]), |_| String::new());
        let view = fit(&scene, 900.0, 600.0, 40.0);
        for node in &scene.nodes {
            let rect = geometry::node_rect(node.at);
            let (top_left, bottom_right) = (
                view.to_screen(Point::new(rect.x, rect.y)),
                view.to_screen(Point::new(rect.x + rect.w, rect.y + rect.h)),
            );
            assert!(top_left.x >= 39.9 && top_left.y >= 39.9, "{top_left:?}");
            assert!(bottom_right.x <= 860.1 && bottom_right.y <= 560.1, "{bottom_right:?}");
        }
        assert_eq!(fit(&Scene::default(), 900.0, 600.0, 40.0), Viewport::default());
    }
}
