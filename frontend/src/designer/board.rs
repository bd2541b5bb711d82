//! The canvas as a state machine of pointer gestures: press, drag, release. Pure, so every
//! interaction (move, connect, pan, rubber band, drop from the palette) is unit-tested without
//! a browser; the canvas component only converts events to calls here.
//!
//! Points given to these methods are screen points relative to the canvas' top-left corner.

use crate::designer::connect::{self, Refusal};
use crate::designer::editor::{Edit, Editor};
use crate::designer::geometry::{self, Hit, Point, Rect, Viewport, NODE_H, NODE_W};

/// A pointer that moved less than this many pixels between press and release clicked.
const CLICK_SLOP: f64 = 3.0;

#[derive(Debug, Clone, Default, PartialEq)]
pub enum Gesture {
    #[default]
    Idle,
    Pan {
        start: Point,
        origin: Viewport,
        moved: bool,
    },
    Move {
        id: u64,
        start: Point,
        origins: Vec<(String, Point)>,
        moved: bool,
    },
    /// Drawing an edge from `from`'s output port; `at` is the loose end in world units.
    Connect {
        from: String,
        at: Point,
        over: Option<String>,
    },
    /// Rubber band between two world points.
    Band {
        start: Point,
        at: Point,
        extend: bool,
    },
    /// Dragging a node type from the palette; `at` is set while the pointer is over the canvas.
    Place {
        kind: String,
        at: Option<Point>,
    },
}

#[derive(Debug, Clone, Default)]
pub struct Board {
    pub editor: Editor,
    pub view: Viewport,
    pub gesture: Gesture,
    /// Why the edge being drawn (or the last one tried) cannot be made.
    pub refusal: Option<Refusal>,
    gestures: u64,
}

impl Board {
    pub fn new(editor: Editor) -> Self {
        Board { editor, ..Default::default() }
    }

    fn hit(&self, world: Point) -> Hit {
        let placed = self.editor.placed();
        geometry::hit_test(placed.iter().copied(), world)
    }

    /// Pointer down on the canvas.
    pub fn press(&mut self, screen: Point, shift: bool) {
        let world = self.view.to_world(screen);
        self.refusal = None;
        self.gestures += 1;
        self.gesture = match self.hit(world) {
            Hit::Output(from) => Gesture::Connect { from, at: world, over: None },
            Hit::Node(id) | Hit::Input(id) => {
                if shift {
                    self.editor.toggle(&id);
                } else if !self.editor.selected.contains(&id) {
                    self.editor.select_only(&id);
                }
                let origins = self
                    .editor
                    .selected
                    .iter()
                    .filter_map(|s| self.editor.position(s).map(|p| (s.clone(), p)))
                    .collect();
                Gesture::Move { id: self.gestures, start: world, origins, moved: false }
            }
            Hit::Background if shift => Gesture::Band { start: world, at: world, extend: true },
            Hit::Background => Gesture::Pan { start: screen, origin: self.view, moved: false },
        };
    }

    /// Pointer moved (while pressed, or while placing from the palette).
    pub fn drag(&mut self, screen: Point) {
        let world = self.view.to_world(screen);
        match &mut self.gesture {
            Gesture::Idle => {}
            Gesture::Pan { start, origin, moved } => {
                *moved |= screen.distance(*start) > CLICK_SLOP;
                self.view.pan = Point::new(origin.pan.x + screen.x - start.x, origin.pan.y + screen.y - start.y);
            }
            Gesture::Move { id, start, origins, moved } => {
                if !*moved && world.distance(*start) * self.view.zoom <= CLICK_SLOP {
                    return;
                }
                *moved = true;
                let (dx, dy) = (world.x - start.x, world.y - start.y);
                let positions = origins.iter().map(|(n, p)| (n.clone(), Point::new(p.x + dx, p.y + dy))).collect();
                let gesture = Some(*id);
                let _ = self.editor.apply(Edit::MoveTo { positions, gesture });
            }
            Gesture::Connect { from, at, over } => {
                *at = world;
                let placed = self.editor.placed();
                *over = geometry::drop_target(placed.iter().copied(), world).filter(|t| t != from);
                self.refusal = over.as_ref().and_then(|to| connect::check(&self.editor.doc, from, to).err());
            }
            Gesture::Band { at, .. } => *at = world,
            Gesture::Place { at, .. } => *at = Some(world),
        }
    }

    /// The palette item's pointer left the canvas: the drop would do nothing.
    pub fn leave(&mut self) {
        if let Gesture::Place { at, .. } = &mut self.gesture {
            *at = None;
        }
    }

    /// Starts dragging a node type from the palette.
    pub fn pick(&mut self, kind: &str) {
        self.refusal = None;
        self.gesture = Gesture::Place { kind: kind.to_owned(), at: None };
    }

    /// Pointer up: finishes the gesture. Returns the message to show when it was refused.
    pub fn release(&mut self) -> Option<String> {
        let gesture = std::mem::take(&mut self.gesture);
        self.editor.seal();
        match gesture {
            Gesture::Idle => None,
            Gesture::Pan { moved, .. } => {
                if !moved {
                    self.editor.clear_selection();
                }
                None
            }
            Gesture::Move { .. } => None,
            Gesture::Connect { from, over, .. } => {
                let to = over?;
                match self.editor.apply(Edit::Connect { from: from.clone(), to: to.clone() }) {
                    Ok(()) => {
                        self.refusal = None;
                        None
                    }
                    Err(message) => {
                        self.refusal = connect::check(&self.editor.doc, &from, &to).err();
                        Some(message)
                    }
                }
            }
            Gesture::Band { start, at, extend } => {
                let band = Rect::spanning(start, at);
                let placed = self.editor.placed();
                let ids = geometry::in_band(placed.iter().copied(), &band);
                self.editor.select_many(ids, extend);
                None
            }
            Gesture::Place { kind, at } => {
                let at = at?;
                let corner = Point::new(at.x - NODE_W / 2.0, at.y - NODE_H / 2.0);
                self.editor.apply(Edit::AddNode { kind, at: corner }).err()
            }
        }
    }

    /// Adds a node of `kind` in the middle of a `width`×`height` canvas (the keyboard way to place).
    pub fn add_at_centre(&mut self, kind: &str, width: f64, height: f64) {
        let centre = self.view.to_world(Point::new(width / 2.0, height / 2.0));
        // Step aside from nodes already there so repeated adds do not stack exactly.
        let mut corner = Point::new(centre.x - NODE_W / 2.0, centre.y - NODE_H / 2.0);
        while self.editor.placed().iter().any(|(_, p)| p.distance(corner) < 5.0) {
            corner = Point::new(corner.x + 30.0, corner.y + 30.0);
        }
        let _ = self.editor.apply(Edit::AddNode { kind: kind.to_owned(), at: corner });
    }

    /// Wheel over the canvas: zoom centred on the cursor.
    pub fn wheel(&mut self, screen: Point, delta_y: f64) {
        self.view = self.view.zoom_at(screen, Viewport::wheel_factor(delta_y));
    }

    /// Zooms by `factor` around the middle of a `width`×`height` canvas (from the keyboard).
    pub fn zoom_centre(&mut self, factor: f64, width: f64, height: f64) {
        self.view = self.view.zoom_at(Point::new(width / 2.0, height / 2.0), factor);
    }

    /// Shows every node in a `width`×`height` canvas.
    pub fn fit(&mut self, width: f64, height: f64) {
        if let Some(b) = geometry::bounds(self.editor.placed().into_iter().map(|(_, p)| p)) {
            self.view = Viewport::fit(b, width, height, 40.0);
        } else {
            self.view = Viewport::default();
        }
    }

    /// Moves the selected nodes by a step (arrow keys).
    pub fn nudge(&mut self, dx: f64, dy: f64) {
        let positions = self
            .editor
            .selected
            .iter()
            .filter_map(|id| self.editor.position(id).map(|p| (id.clone(), Point::new(p.x + dx, p.y + dy))))
            .collect();
        let _ = self.editor.apply(Edit::MoveTo { positions, gesture: None });
    }

    /// The rubber band in world units while one is drawn.
    pub fn band(&self) -> Option<Rect> {
        match &self.gesture {
            Gesture::Band { start, at, .. } => Some(Rect::spanning(*start, *at)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_model::Definition;

    /// Two nodes: a at (0,0), b at (300,0); zoom 1, no pan, so screen = world.
    fn board() -> Board {
        let mut b = Board::new(Editor::new(Definition::default()));
        b.editor.apply(Edit::AddNode { kind: "noop".into(), at: Point::new(0.0, 0.0) }).unwrap();
        b.editor.apply(Edit::AddNode { kind: "noop".into(), at: Point::new(300.0, 0.0) }).unwrap();
        b.editor.clear_selection();
        b
    }

    fn drag(b: &mut Board, from: Point, to: Point, shift: bool) -> Option<String> {
        b.press(from, shift);
        b.drag(Point::new((from.x + to.x) / 2.0, (from.y + to.y) / 2.0));
        b.drag(to);
        b.release()
    }

    const A_OUT: Point = Point::new(NODE_W, NODE_H / 2.0);
    const B_OUT: Point = Point::new(300.0 + NODE_W, NODE_H / 2.0);
    const B_IN: Point = Point::new(300.0, NODE_H / 2.0);
    const A_BODY: Point = Point::new(60.0, 20.0);

    #[test]
    fn dragging_from_an_output_to_an_input_connects() {
        let mut b = board();
        assert_eq!(drag(&mut b, A_OUT, B_IN, false), None);
        assert_eq!(b.editor.doc.edges.len(), 1);
        assert_eq!(b.editor.doc.edges[0].from, "noop_1");
        assert_eq!(b.editor.doc.edges[0].to, "noop_2");
    }

    #[test]
    fn drawing_a_cycle_is_refused_while_drawing_and_on_release() {
        let mut b = board();
        drag(&mut b, A_OUT, B_IN, false);
        b.press(B_OUT, false);
        b.drag(A_BODY);
        assert_eq!(
            b.refusal.as_ref().map(Refusal::message).as_deref(),
            Some("That would make a cycle: noop_2 → noop_1 → noop_2.")
        );
        let message = b.release().unwrap();
        assert!(message.contains("cycle"));
        assert_eq!(b.editor.doc.edges.len(), 1);
    }

    #[test]
    fn dragging_a_node_moves_it_as_one_undo_step() {
        let mut b = board();
        drag(&mut b, A_BODY, Point::new(160.0, 220.0), false);
        assert_eq!(b.editor.position("noop_1"), Some(Point::new(100.0, 200.0)));
        assert_eq!(b.editor.single_selected().as_deref(), Some("noop_1"));
        b.editor.undo();
        assert_eq!(b.editor.position("noop_1"), Some(Point::new(0.0, 0.0)));
    }

    #[test]
    fn shift_click_extends_and_a_background_click_clears() {
        let mut b = board();
        drag(&mut b, A_BODY, A_BODY, false);
        drag(&mut b, Point::new(350.0, 20.0), Point::new(350.0, 20.0), true);
        assert_eq!(b.editor.selected.len(), 2);
        // Dragging one of several selected nodes moves them all.
        drag(&mut b, A_BODY, Point::new(60.0, 120.0), false);
        assert_eq!(b.editor.position("noop_2"), Some(Point::new(300.0, 100.0)));
        drag(&mut b, Point::new(700.0, 700.0), Point::new(700.0, 700.0), false);
        assert!(b.editor.selected.is_empty());
    }

    #[test]
    fn a_shift_drag_on_the_background_draws_a_rubber_band() {
        let mut b = board();
        b.press(Point::new(-20.0, -20.0), true);
        b.drag(Point::new(100.0, 100.0));
        assert!(b.band().is_some());
        b.release();
        assert_eq!(b.editor.selected.iter().collect::<Vec<_>>(), ["noop_1"]);
        assert_eq!(b.band(), None);
    }

    #[test]
    fn dragging_the_background_pans_and_the_wheel_zooms_at_the_cursor() {
        let mut b = board();
        drag(&mut b, Point::new(700.0, 500.0), Point::new(650.0, 520.0), false);
        assert_eq!(b.view.pan, Point::new(-50.0, 20.0));
        let cursor = Point::new(400.0, 300.0);
        let under = b.view.to_world(cursor);
        b.wheel(cursor, -120.0);
        assert!(b.view.zoom > 1.0);
        assert!(b.view.to_world(cursor).distance(under) < 1e-9);
    }

    #[test]
    fn dropping_from_the_palette_places_the_node_under_the_pointer() {
        let mut b = board();
        b.pick("delay");
        b.drag(Point::new(500.0, 300.0));
        assert_eq!(b.release(), None);
        let node = b.editor.node("delay_1").unwrap();
        assert_eq!(node.position.unwrap().x, 500.0 - NODE_W / 2.0);
        // Released outside the canvas: nothing is added.
        b.pick("noop");
        b.drag(Point::new(10.0, 10.0));
        b.leave();
        b.release();
        assert_eq!(b.editor.doc.nodes.len(), 3);
    }

    #[test]
    fn fit_and_keyboard_helpers() {
        let mut b = board();
        b.fit(1000.0, 600.0);
        let left = b.view.to_screen(Point::new(0.0, 0.0));
        assert!(left.x >= 39.0);
        b.add_at_centre("noop", 1000.0, 600.0);
        b.add_at_centre("noop", 1000.0, 600.0);
        let p3 = b.editor.position("noop_3").unwrap();
        let p4 = b.editor.position("noop_4").unwrap();
        assert_ne!(p3, p4);
        let middle = b.view.to_world(Point::new(500.0, 300.0));
        b.zoom_centre(1.25, 1000.0, 600.0);
        assert!(b.view.to_world(Point::new(500.0, 300.0)).distance(middle) < 1e-9);
        b.nudge(10.0, 0.0);
        assert_eq!(b.editor.position("noop_4").unwrap().x, p4.x + 10.0);
    }
}
