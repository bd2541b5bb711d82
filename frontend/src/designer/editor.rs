//! The designer's document: the draft being edited, the selection, and the undo stack. Every
//! change to the draft goes through [`Editor::apply`] with an [`Edit`], so each one is undoable.

use crate::designer::connect;
use crate::designer::geometry::{self, Point};
use crate::designer::history::History;
use crate::designer::layout;
use std::collections::BTreeSet;
use trellis_model::{Definition, Edge, EdgeWhen, Node, Position, Settings};

/// Where a definition with no position at all (pushed by the CLI, written by hand) starts.
const LAYOUT_ORIGIN: Point = Point { x: 40.0, y: 40.0 };

/// Nodes and edges copied with Ctrl+C; edges only between copied nodes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Clip {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// One change to the draft.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Places a new node of `kind` with its top-left corner at `at`.
    AddNode {
        kind: String,
        at: Point,
    },
    /// Removes the selected nodes (and their edges) and the selected edge.
    DeleteSelection,
    /// Puts nodes at new positions; `gesture` groups one drag's moves into one undo step.
    MoveTo {
        positions: Vec<(String, Point)>,
        gesture: Option<u64>,
    },
    Connect {
        from: String,
        to: String,
    },
    SetEdgeWhen {
        from: String,
        to: String,
        when: EdgeWhen,
    },
    /// Replaces a node (same id) as edited in the side panel; `field` groups typing into one step.
    UpdateNode {
        node: Node,
        field: String,
    },
    /// Renames a node, carrying its edges along.
    RenameNode {
        from: String,
        to: String,
    },
    UpdateSettings {
        settings: Settings,
        field: String,
    },
    AutoLayout,
    Paste(Clip),
    /// Replaces the whole draft (restoring a version, importing).
    Replace(Definition),
}

#[derive(Debug, Clone, Default)]
pub struct Editor {
    pub doc: Definition,
    pub selected: BTreeSet<String>,
    pub selected_edge: Option<(String, String)>,
    history: History<Definition>,
    /// The draft as last loaded or saved, to tell whether there are unsaved changes.
    saved: Definition,
    /// Bumped when the draft changes in a way the side panel shows, other than by typing in it,
    /// so the panel's inputs (which keep their own text while typed into) reload their values.
    pub form_epoch: u64,
    pastes: u32,
}

impl Editor {
    pub fn new(doc: Definition) -> Self {
        let mut editor = Editor { saved: doc.clone(), doc, ..Default::default() };
        editor.place_unpositioned();
        // Placing nodes that had no position is not an edit the author made.
        editor.saved = editor.doc.clone();
        editor
    }

    /// Gives every node without a position one from the auto-layout (left to right along the
    /// edges), so the canvas can draw it; when some nodes have positions, the others are laid
    /// out below them, and the placed ones stay where their author put them.
    fn place_unpositioned(&mut self) {
        if self.doc.nodes.iter().all(|n| n.position.is_some()) {
            return;
        }
        let placed = geometry::bounds(self.doc.nodes.iter().filter(|n| n.position.is_some()).map(position_of));
        let origin = placed.map_or(LAYOUT_ORIGIN, |b| Point::new(b.x, b.y + b.h + layout::ROW_GAP));
        let at = layout::layered(&self.doc, origin);
        for node in self.doc.nodes.iter_mut().filter(|n| n.position.is_none()) {
            let p = at.get(&node.id).copied().unwrap_or(origin);
            node.position = Some(Position { x: p.x, y: p.y });
        }
    }

    pub fn position(&self, id: &str) -> Option<Point> {
        self.doc.nodes.iter().find(|n| n.id == id).map(position_of)
    }

    /// Node ids and positions in drawing order, for hit testing.
    pub fn placed(&self) -> Vec<(&str, Point)> {
        self.doc.nodes.iter().map(|n| (n.id.as_str(), position_of(n))).collect()
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.doc.nodes.iter().find(|n| n.id == id)
    }

    pub fn is_dirty(&self) -> bool {
        self.doc != self.saved
    }

    /// Marks `doc` as what the server now holds (after a load or save).
    pub fn mark_saved(&mut self, doc: &Definition) {
        self.saved = doc.clone();
    }

    /// The one selected node, which the side panel shows.
    pub fn single_selected(&self) -> Option<String> {
        (self.selected.len() == 1).then(|| self.selected.iter().next().cloned()).flatten()
    }

    pub fn select_only(&mut self, id: &str) {
        self.selected = BTreeSet::from([id.to_owned()]);
        self.selected_edge = None;
    }

    /// Shift-click: adds a node to the selection or takes it out.
    pub fn toggle(&mut self, id: &str) {
        if !self.selected.remove(id) {
            self.selected.insert(id.to_owned());
        }
        self.selected_edge = None;
    }

    pub fn select_edge(&mut self, from: &str, to: &str) {
        self.selected.clear();
        self.selected_edge = Some((from.to_owned(), to.to_owned()));
    }

    pub fn select_all(&mut self) {
        self.selected = self.doc.nodes.iter().map(|n| n.id.clone()).collect();
        self.selected_edge = None;
    }

    pub fn clear_selection(&mut self) {
        self.selected.clear();
        self.selected_edge = None;
    }

    /// Selects what a rubber band touched, added to the selection when `extend`.
    pub fn select_many(&mut self, ids: Vec<String>, extend: bool) {
        if !extend {
            self.selected.clear();
        }
        self.selected.extend(ids);
        self.selected_edge = None;
    }

    pub fn can_undo(&self) -> bool {
        self.history.can_undo()
    }

    pub fn can_redo(&self) -> bool {
        self.history.can_redo()
    }

    pub fn undo(&mut self) -> bool {
        let previous = self.history.undo(self.doc.clone());
        self.step_to(previous)
    }

    pub fn redo(&mut self) -> bool {
        let next = self.history.redo(self.doc.clone());
        self.step_to(next)
    }

    /// Shows the draft undo or redo stepped to; `false` when there was no step to take.
    fn step_to(&mut self, doc: Option<Definition>) -> bool {
        let Some(doc) = doc else { return false };
        self.doc = doc;
        self.after_history_step();
        true
    }

    fn after_history_step(&mut self) {
        let ids: BTreeSet<String> = self.doc.nodes.iter().map(|n| n.id.clone()).collect();
        self.selected.retain(|id| ids.contains(id));
        if let Some((from, to)) = &self.selected_edge {
            if !self.doc.edges.iter().any(|e| &e.from == from && &e.to == to) {
                self.selected_edge = None;
            }
        }
        self.form_epoch += 1;
    }

    /// Ends the current drag or typing run: the next edit is a separate undo step.
    pub fn seal(&mut self) {
        self.history.seal();
    }

    /// The selection as a clip, or `None` when no node is selected.
    pub fn copy(&self) -> Option<Clip> {
        if self.selected.is_empty() {
            return None;
        }
        let nodes: Vec<Node> = self.doc.nodes.iter().filter(|n| self.selected.contains(&n.id)).cloned().collect();
        let edges = self
            .doc
            .edges
            .iter()
            .filter(|e| self.selected.contains(&e.from) && self.selected.contains(&e.to))
            .cloned()
            .collect();
        Some(Clip { nodes, edges })
    }

    /// Applies one edit as one undoable step; a refused edit changes nothing and says why.
    pub fn apply(&mut self, edit: Edit) -> Result<(), String> {
        let before = self.doc.clone();
        let key = match &edit {
            Edit::MoveTo { gesture: Some(g), .. } => Some(format!("move:{g}")),
            Edit::UpdateNode { node, field } => Some(format!("node:{}:{field}", node.id)),
            Edit::UpdateSettings { field, .. } => Some(format!("settings:{field}")),
            _ => None,
        };
        // Edits from the panel itself, and moves (positions are not in any form), leave it alone.
        let keeps_form = matches!(
            edit,
            Edit::UpdateNode { .. } | Edit::UpdateSettings { .. } | Edit::MoveTo { .. } | Edit::AutoLayout
        );
        self.perform(edit)?;
        if self.doc != before {
            self.history.record(before, key.as_deref());
            if !keeps_form {
                self.form_epoch += 1;
            }
        }
        Ok(())
    }

    fn perform(&mut self, edit: Edit) -> Result<(), String> {
        match edit {
            Edit::AddNode { kind, at } => {
                let id = fresh_id(&self.doc, &kind);
                let mut node = Node::new(id.clone(), kind);
                node.position = Some(Position { x: geometry::snap(at.x), y: geometry::snap(at.y) });
                self.doc.nodes.push(node);
                self.select_only(&id);
            }
            Edit::DeleteSelection => {
                let gone = std::mem::take(&mut self.selected);
                self.doc.nodes.retain(|n| !gone.contains(&n.id));
                self.doc.edges.retain(|e| !gone.contains(&e.from) && !gone.contains(&e.to));
                if let Some((from, to)) = self.selected_edge.take() {
                    self.doc.edges.retain(|e| !(e.from == from && e.to == to));
                }
            }
            Edit::MoveTo { positions, .. } => {
                for (id, p) in positions {
                    if let Some(node) = self.doc.nodes.iter_mut().find(|n| n.id == id) {
                        node.position = Some(Position { x: geometry::snap(p.x), y: geometry::snap(p.y) });
                    }
                }
            }
            Edit::Connect { from, to } => {
                connect::check(&self.doc, &from, &to).map_err(|r| r.message())?;
                let when = self.default_when(&from);
                self.doc.edges.push(Edge { from: from.clone(), to: to.clone(), when });
                self.select_edge(&from, &to);
            }
            Edit::SetEdgeWhen { from, to, when } => {
                let edge = self.doc.edges.iter_mut().find(|e| e.from == from && e.to == to).ok_or("no such edge")?;
                edge.when = when;
            }
            Edit::UpdateNode { node, .. } => {
                let slot = self.doc.nodes.iter_mut().find(|n| n.id == node.id).ok_or("no such node")?;
                *slot = node;
            }
            Edit::RenameNode { from, to } => {
                if from == to {
                    return Ok(());
                }
                if !trellis_model::validate::is_valid_node_id(&to) {
                    return Err(format!("`{to}` is not a valid id: use 1-64 letters, digits, `_` or `-`."));
                }
                if self.doc.nodes.iter().any(|n| n.id == to) {
                    return Err(format!("Another node already has the id `{to}`."));
                }
                let node = self.doc.nodes.iter_mut().find(|n| n.id == from).ok_or("no such node")?;
                node.id = to.clone();
                for e in &mut self.doc.edges {
                    if e.from == from {
                        e.from = to.clone();
                    }
                    if e.to == from {
                        e.to = to.clone();
                    }
                }
                if self.selected.remove(&from) {
                    self.selected.insert(to);
                }
            }
            Edit::UpdateSettings { settings, .. } => self.doc.settings = settings,
            Edit::AutoLayout => {
                let origin = geometry::bounds(self.placed().into_iter().map(|(_, p)| p))
                    .map_or(Point::new(40.0, 40.0), |b| Point::new(b.x, b.y));
                let at = layout::layered(&self.doc, origin);
                for node in &mut self.doc.nodes {
                    if let Some(p) = at.get(&node.id) {
                        node.position = Some(Position { x: p.x, y: p.y });
                    }
                }
            }
            Edit::Paste(clip) => self.paste(clip),
            Edit::Replace(doc) => {
                self.doc = doc;
                self.place_unpositioned();
                self.clear_selection();
            }
        }
        Ok(())
    }

    /// An edge out of a branch starts on its first outcome; any other edge on success.
    fn default_when(&self, from: &str) -> EdgeWhen {
        match self.node(from) {
            Some(n) if n.known_kind() == Some(trellis_model::config::NodeKind::Branch) => {
                trellis_model::config::branch_outcomes(&n.config)
                    .and_then(|o| o.into_iter().next())
                    .map_or(EdgeWhen::Success, EdgeWhen::Outcome)
            }
            _ => EdgeWhen::Success,
        }
    }

    fn paste(&mut self, clip: Clip) {
        self.pastes += 1;
        let offset = 30.0 * f64::from(self.pastes);
        let mut renamed = std::collections::HashMap::new();
        let mut fresh_ids = BTreeSet::new();
        for node in &clip.nodes {
            let mut copy = node.clone();
            copy.id = fresh_id(&self.doc, &node.kind);
            let p = position_of(node);
            copy.position = Some(Position { x: p.x + offset, y: p.y + offset });
            renamed.insert(node.id.clone(), copy.id.clone());
            fresh_ids.insert(copy.id.clone());
            self.doc.nodes.push(copy);
        }
        for edge in clip.edges {
            if let (Some(from), Some(to)) = (renamed.get(&edge.from), renamed.get(&edge.to)) {
                self.doc.edges.push(Edge { from: from.clone(), to: to.clone(), when: edge.when });
            }
        }
        self.selected = fresh_ids;
        self.selected_edge = None;
    }
}

pub fn position_of(node: &Node) -> Point {
    node.position.map_or(Point::default(), |p| Point::new(p.x, p.y))
}

/// The first unused id of the form `{kind}_{n}`.
pub fn fresh_id(doc: &Definition, kind: &str) -> String {
    let base: String = kind.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').take(50).collect();
    let base = if base.is_empty() { "node".to_owned() } else { base };
    (1..).map(|n| format!("{base}_{n}")).find(|id| !doc.nodes.iter().any(|n| &n.id == id)).expect("ids are unbounded")
}

#[cfg(test)]
mod tests;
