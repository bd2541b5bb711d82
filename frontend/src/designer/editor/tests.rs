//! Unit tests of the editor's edits, selection, undo and clipboard.

use super::*;

fn two_nodes() -> Editor {
    let mut e = Editor::new(Definition::default());
    e.apply(Edit::AddNode { kind: "noop".into(), at: Point::new(0.0, 0.0) }).unwrap();
    e.apply(Edit::AddNode { kind: "http".into(), at: Point::new(301.0, 49.0) }).unwrap();
    e
}

#[test]
fn added_nodes_get_fresh_ids_snapped_positions_and_the_selection() {
    let e = two_nodes();
    let ids: Vec<_> = e.doc.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["noop_1", "http_1"]);
    assert_eq!(e.position("http_1"), Some(Point::new(300.0, 50.0)));
    assert_eq!(e.single_selected().as_deref(), Some("http_1"));
    assert!(e.is_dirty());
}

#[test]
fn every_edit_undoes_and_redoes() {
    let mut e = two_nodes();
    e.apply(Edit::Connect { from: "noop_1".into(), to: "http_1".into() }).unwrap();
    e.select_only("noop_1");
    e.apply(Edit::DeleteSelection).unwrap();
    assert_eq!(e.doc.nodes.len(), 1);
    assert!(e.doc.edges.is_empty(), "edges of a deleted node go with it");
    assert!(e.undo());
    assert_eq!(e.doc.nodes.len(), 2);
    assert_eq!(e.doc.edges.len(), 1);
    assert!(e.undo());
    assert!(e.doc.edges.is_empty());
    assert!(e.redo());
    assert_eq!(e.doc.edges.len(), 1);
    assert!(e.undo() && e.undo() && e.undo());
    assert!(e.doc.nodes.is_empty());
    assert!(!e.undo());
    assert!(!e.is_dirty());
}

#[test]
fn a_drag_is_one_undo_step() {
    let mut e = two_nodes();
    for x in [10.0, 20.0, 30.0] {
        e.apply(Edit::MoveTo { positions: vec![("noop_1".into(), Point::new(x, 0.0))], gesture: Some(7) }).unwrap();
    }
    e.seal();
    assert_eq!(e.position("noop_1"), Some(Point::new(30.0, 0.0)));
    e.undo();
    assert_eq!(e.position("noop_1"), Some(Point::new(0.0, 0.0)));
    let epoch = e.form_epoch;
    e.apply(Edit::AutoLayout).unwrap();
    assert_eq!(e.form_epoch, epoch, "moving nodes does not reload the side panel");
}

#[test]
fn a_cycle_is_refused_and_changes_nothing() {
    let mut e = two_nodes();
    e.apply(Edit::Connect { from: "noop_1".into(), to: "http_1".into() }).unwrap();
    let before = e.doc.clone();
    let err = e.apply(Edit::Connect { from: "http_1".into(), to: "noop_1".into() }).unwrap_err();
    assert_eq!(err, "That would make a cycle: http_1 → noop_1 → http_1.");
    assert_eq!(e.doc, before);
}

#[test]
fn edges_from_a_branch_start_on_its_first_outcome() {
    let mut e = two_nodes();
    e.apply(Edit::AddNode { kind: "branch".into(), at: Point::new(0.0, 200.0) }).unwrap();
    e.apply(Edit::Connect { from: "branch_1".into(), to: "http_1".into() }).unwrap();
    assert_eq!(e.doc.edges[0].when, EdgeWhen::Outcome("true".into()));
    e.apply(Edit::SetEdgeWhen {
        from: "branch_1".into(),
        to: "http_1".into(),
        when: EdgeWhen::Outcome("false".into()),
    })
    .unwrap();
    assert_eq!(e.doc.edges[0].when.as_str(), "false");
}

#[test]
fn copy_and_paste_duplicate_nodes_and_their_inner_edges() {
    let mut e = two_nodes();
    e.apply(Edit::Connect { from: "noop_1".into(), to: "http_1".into() }).unwrap();
    e.select_all();
    let clip = e.copy().unwrap();
    e.apply(Edit::Paste(clip)).unwrap();
    let ids: Vec<_> = e.doc.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["noop_1", "http_1", "noop_2", "http_2"]);
    assert!(e.doc.edges.iter().any(|x| x.from == "noop_2" && x.to == "http_2"));
    assert_eq!(e.selected, BTreeSet::from(["noop_2".to_owned(), "http_2".to_owned()]));
    assert_eq!(e.position("noop_2"), Some(Point::new(30.0, 30.0)));
    e.undo();
    assert_eq!(e.doc.nodes.len(), 2);
}

#[test]
fn renaming_a_node_carries_its_edges_and_refuses_clashes() {
    let mut e = two_nodes();
    e.apply(Edit::Connect { from: "noop_1".into(), to: "http_1".into() }).unwrap();
    e.apply(Edit::RenameNode { from: "http_1".into(), to: "fetch".into() }).unwrap();
    assert_eq!(e.doc.edges[0].to, "fetch");
    assert!(e.apply(Edit::RenameNode { from: "fetch".into(), to: "noop_1".into() }).is_err());
    assert!(e.apply(Edit::RenameNode { from: "fetch".into(), to: "a b".into() }).is_err());
}

#[test]
fn typing_in_one_field_is_one_step_and_does_not_reload_the_form() {
    let mut e = two_nodes();
    let epoch = e.form_epoch;
    for url in ["h", "ht", "http://x"] {
        let mut node = e.node("http_1").unwrap().clone();
        node.config = serde_json::json!({ "url": url });
        e.apply(Edit::UpdateNode { node, field: "config.url".into() }).unwrap();
    }
    assert_eq!(e.form_epoch, epoch);
    e.undo();
    assert_eq!(e.node("http_1").unwrap().config, serde_json::json!({}));
    assert!(e.form_epoch > epoch, "undo reloads the form");
}

#[test]
fn loading_places_nodes_without_positions_and_is_not_dirty() {
    let mut def = Definition::default();
    def.nodes.push(Node::new("a", "noop"));
    def.nodes.push(Node::new("b", "noop"));
    let mut e = Editor::new(def);
    assert!(!e.is_dirty());
    assert_ne!(e.position("a"), e.position("b"));
    e.apply(Edit::AutoLayout).unwrap();
    e.mark_saved(&e.doc.clone());
    assert!(!e.is_dirty());
}

#[test]
fn a_definition_without_positions_opens_laid_out_along_its_edges() {
    let mut def = Definition::default();
    // Written in the reverse of the order they run: a grid in file order would run edges backwards.
    for id in ["c", "b", "a"] {
        def.nodes.push(Node::new(id, "noop"));
    }
    def.edges.push(Edge::new("a", "b"));
    def.edges.push(Edge::new("b", "c"));
    let e = Editor::new(def);
    let x = |id: &str| e.position(id).unwrap().x;
    assert!(x("a") < x("b") && x("b") < x("c"), "left to right along the edges");
    assert_eq!(e.position("a"), Some(LAYOUT_ORIGIN));
}

#[test]
fn nodes_without_positions_are_laid_out_below_the_placed_ones_which_stay() {
    let mut def = Definition::default();
    let mut placed = Node::new("placed", "noop");
    placed.position = Some(Position { x: 500.0, y: 300.0 });
    def.nodes.push(placed);
    def.nodes.push(Node::new("new", "noop"));
    let e = Editor::new(def);
    assert_eq!(e.position("placed"), Some(Point::new(500.0, 300.0)));
    let new = e.position("new").unwrap();
    assert!(new.y >= 300.0 + geometry::NODE_H, "below the placed node, not on it: {new:?}");
}
