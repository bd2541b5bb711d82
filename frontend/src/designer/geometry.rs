//! Canvas geometry: world and screen coordinates, the pan/zoom viewport, node boxes and their
//! ports, hit testing, rubber-band selection and fit-to-view. World units are the positions
//! stored in the definition; screen units are CSS pixels relative to the canvas' top-left corner.

/// Size of a node's box in world units.
pub const NODE_W: f64 = 180.0;
pub const NODE_H: f64 = 56.0;
/// How far from a port's centre a pointer still grabs it, in world units.
pub const PORT_RADIUS: f64 = 9.0;
pub const MIN_ZOOM: f64 = 0.2;
pub const MAX_ZOOM: f64 = 3.0;

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    pub const fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }

    pub fn distance(self, other: Point) -> f64 {
        ((self.x - other.x).powi(2) + (self.y - other.y).powi(2)).sqrt()
    }
}

/// An axis-aligned rectangle; `w` and `h` are never negative.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    /// The rectangle spanned by two corners given in any order (a rubber band dragged any way).
    pub fn spanning(a: Point, b: Point) -> Self {
        Rect { x: a.x.min(b.x), y: a.y.min(b.y), w: (a.x - b.x).abs(), h: (a.y - b.y).abs() }
    }

    pub fn contains(&self, p: Point) -> bool {
        p.x >= self.x && p.x <= self.x + self.w && p.y >= self.y && p.y <= self.y + self.h
    }

    /// True when the two rectangles share any area or edge.
    pub fn intersects(&self, other: &Rect) -> bool {
        self.x <= other.x + other.w
            && other.x <= self.x + self.w
            && self.y <= other.y + other.h
            && other.y <= self.y + self.h
    }

    /// The smallest rectangle holding both.
    pub fn union(&self, other: &Rect) -> Rect {
        let x = self.x.min(other.x);
        let y = self.y.min(other.y);
        let right = (self.x + self.w).max(other.x + other.w);
        let bottom = (self.y + self.h).max(other.y + other.h);
        Rect { x, y, w: right - x, h: bottom - y }
    }
}

/// The box of a node whose top-left corner is at `pos`.
pub fn node_rect(pos: Point) -> Rect {
    Rect { x: pos.x, y: pos.y, w: NODE_W, h: NODE_H }
}

/// Where edges arrive: the middle of the left side.
pub fn input_port(pos: Point) -> Point {
    Point::new(pos.x, pos.y + NODE_H / 2.0)
}

/// Where edges leave: the middle of the right side.
pub fn output_port(pos: Point) -> Point {
    Point::new(pos.x + NODE_W, pos.y + NODE_H / 2.0)
}

/// An SVG path for an edge: a horizontal S-curve from an output port to an input port.
pub fn edge_path(from: Point, to: Point) -> String {
    let bend = ((to.x - from.x).abs() / 2.0).max(40.0);
    format!(
        "M {:.1} {:.1} C {:.1} {:.1}, {:.1} {:.1}, {:.1} {:.1}",
        from.x,
        from.y,
        from.x + bend,
        from.y,
        to.x - bend,
        to.y,
        to.x,
        to.y
    )
}

/// The middle of an edge's curve, where its `when` label goes.
pub fn edge_midpoint(from: Point, to: Point) -> Point {
    Point::new((from.x + to.x) / 2.0, (from.y + to.y) / 2.0)
}

/// Pan and zoom: `screen = world * zoom + pan`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    pub pan: Point,
    pub zoom: f64,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport { pan: Point::new(0.0, 0.0), zoom: 1.0 }
    }
}

impl Viewport {
    pub fn to_world(self, screen: Point) -> Point {
        Point::new((screen.x - self.pan.x) / self.zoom, (screen.y - self.pan.y) / self.zoom)
    }

    #[cfg(test)]
    pub fn to_screen(self, world: Point) -> Point {
        Point::new(world.x * self.zoom + self.pan.x, world.y * self.zoom + self.pan.y)
    }

    /// Zooms by `factor` keeping the world point under `screen` where it is (zoom at the cursor).
    pub fn zoom_at(self, screen: Point, factor: f64) -> Viewport {
        let zoom = (self.zoom * factor).clamp(MIN_ZOOM, MAX_ZOOM);
        let anchor = self.to_world(screen);
        Viewport { zoom, pan: Point::new(screen.x - anchor.x * zoom, screen.y - anchor.y * zoom) }
    }

    /// The zoom factor for one wheel event: scrolling down (positive delta) zooms out.
    pub fn wheel_factor(delta_y: f64) -> f64 {
        (-delta_y.clamp(-500.0, 500.0) * 0.002).exp()
    }

    /// The SVG `transform` attribute of the world layer.
    pub fn transform(self) -> String {
        format!("translate({:.2} {:.2}) scale({:.4})", self.pan.x, self.pan.y, self.zoom)
    }

    /// The viewport showing all of `bounds` centred in a `width`×`height` canvas with `margin`
    /// pixels around it, never zoomed in beyond 1 (a small graph stays at its natural size).
    pub fn fit(bounds: Rect, width: f64, height: f64, margin: f64) -> Viewport {
        let avail_w = (width - 2.0 * margin).max(1.0);
        let avail_h = (height - 2.0 * margin).max(1.0);
        let zoom = (avail_w / bounds.w.max(1.0)).min(avail_h / bounds.h.max(1.0)).clamp(MIN_ZOOM, 1.0);
        let centre = Point::new(bounds.x + bounds.w / 2.0, bounds.y + bounds.h / 2.0);
        Viewport { zoom, pan: Point::new(width / 2.0 - centre.x * zoom, height / 2.0 - centre.y * zoom) }
    }
}

/// How many characters of a node's title its box shows beside the icon and the problem mark.
pub const TITLE_CHARS: usize = 15;

/// `text` as a box holding `max` characters draws it: whole when it fits, else cut with "…" (the
/// whole text is the node's `<title>`, shown on hover, and in its accessible name).
pub fn clip_label(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

/// The rectangle around every node at `positions`, or `None` when there are none.
pub fn bounds(positions: impl IntoIterator<Item = Point>) -> Option<Rect> {
    positions.into_iter().map(node_rect).reduce(|a, b| a.union(&b))
}

/// What a pointer at a world point is over, top-most first: ports win over the body of their node
/// so a drag from the right edge connects instead of moving.
#[derive(Debug, Clone, PartialEq)]
pub enum Hit {
    Output(String),
    Input(String),
    Node(String),
    Background,
}

/// Hit-tests `p` against nodes drawn in order (later ones on top).
pub fn hit_test<'a>(nodes: impl DoubleEndedIterator<Item = (&'a str, Point)> + Clone, p: Point) -> Hit {
    for (id, pos) in nodes.clone().rev() {
        if output_port(pos).distance(p) <= PORT_RADIUS {
            return Hit::Output(id.to_owned());
        }
        if input_port(pos).distance(p) <= PORT_RADIUS {
            return Hit::Input(id.to_owned());
        }
    }
    for (id, pos) in nodes.rev() {
        if node_rect(pos).contains(p) {
            return Hit::Node(id.to_owned());
        }
    }
    Hit::Background
}

/// The node whose input port (or body) is under `p`, for finishing a connection.
pub fn drop_target<'a>(nodes: impl DoubleEndedIterator<Item = (&'a str, Point)> + Clone, p: Point) -> Option<String> {
    match hit_test(nodes, p) {
        Hit::Input(id) | Hit::Node(id) | Hit::Output(id) => Some(id),
        Hit::Background => None,
    }
}

/// The ids of the nodes whose boxes touch `band`.
pub fn in_band<'a>(nodes: impl Iterator<Item = (&'a str, Point)>, band: &Rect) -> Vec<String> {
    nodes.filter(|(_, pos)| node_rect(*pos).intersects(band)).map(|(id, _)| id.to_owned()).collect()
}

/// Snaps a coordinate to the grid nodes align to.
pub fn snap(v: f64) -> f64 {
    const GRID: f64 = 10.0;
    (v / GRID).round() * GRID
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Point, b: Point) -> bool {
        a.distance(b) < 1e-9
    }

    #[test]
    fn a_long_title_is_cut_with_an_ellipsis_and_a_short_one_kept_whole() {
        assert_eq!(clip_label("Fetch", TITLE_CHARS), "Fetch");
        assert_eq!(clip_label("exactly fifteen", 15), "exactly fifteen");
        let cut = clip_label("Fetch the customer's record from the CRM", TITLE_CHARS);
        assert_eq!(cut, "Fetch the cust…");
        assert_eq!(cut.chars().count(), TITLE_CHARS);
        // Cut at a space: no space before the ellipsis; characters, not bytes.
        assert_eq!(clip_label("abcd efgh", 6), "abcd…");
        assert_eq!(clip_label("ééééééé", 4), "ééé…");
    }

    #[test]
    fn screen_and_world_round_trip() {
        let v = Viewport { pan: Point::new(30.0, -12.0), zoom: 1.7 };
        let p = Point::new(123.0, 45.5);
        assert!(close(v.to_world(v.to_screen(p)), p));
        assert!(close(Viewport::default().to_world(p), p));
    }

    #[test]
    fn zooming_keeps_the_point_under_the_cursor() {
        let v = Viewport { pan: Point::new(40.0, 10.0), zoom: 1.0 };
        let cursor = Point::new(300.0, 200.0);
        let before = v.to_world(cursor);
        let zoomed = v.zoom_at(cursor, 1.5);
        assert!((zoomed.zoom - 1.5).abs() < 1e-9);
        assert!(close(zoomed.to_world(cursor), before));
    }

    #[test]
    fn zoom_is_clamped() {
        let v = Viewport::default().zoom_at(Point::new(0.0, 0.0), 100.0);
        assert_eq!(v.zoom, MAX_ZOOM);
        let v = Viewport::default().zoom_at(Point::new(0.0, 0.0), 0.0001);
        assert_eq!(v.zoom, MIN_ZOOM);
        assert!(Viewport::wheel_factor(100.0) < 1.0 && Viewport::wheel_factor(-100.0) > 1.0);
    }

    #[test]
    fn ports_sit_on_the_sides_of_the_box() {
        let pos = Point::new(100.0, 50.0);
        assert_eq!(input_port(pos), Point::new(100.0, 50.0 + NODE_H / 2.0));
        assert_eq!(output_port(pos), Point::new(100.0 + NODE_W, 50.0 + NODE_H / 2.0));
    }

    #[test]
    fn hit_testing_prefers_ports_and_top_nodes() {
        let nodes = [("a", Point::new(0.0, 0.0)), ("b", Point::new(100.0, 0.0))];
        let it = || nodes.iter().map(|(id, p)| (*id, *p));
        // b is drawn later, so it is on top where the boxes overlap.
        assert_eq!(hit_test(it(), Point::new(150.0, 20.0)), Hit::Node("b".into()));
        assert_eq!(hit_test(it(), Point::new(20.0, 20.0)), Hit::Node("a".into()));
        assert_eq!(hit_test(it(), Point::new(NODE_W + 2.0, NODE_H / 2.0)), Hit::Output("a".into()));
        assert_eq!(hit_test(it(), Point::new(97.0, NODE_H / 2.0)), Hit::Input("b".into()));
        assert_eq!(hit_test(it(), Point::new(500.0, 500.0)), Hit::Background);
        assert_eq!(drop_target(it(), Point::new(500.0, 500.0)), None);
    }

    #[test]
    fn a_rubber_band_selects_what_it_touches_dragged_any_way() {
        let nodes = [("a", Point::new(0.0, 0.0)), ("b", Point::new(400.0, 0.0)), ("c", Point::new(0.0, 300.0))];
        let band = Rect::spanning(Point::new(250.0, 100.0), Point::new(-10.0, -10.0));
        assert_eq!(band, Rect { x: -10.0, y: -10.0, w: 260.0, h: 110.0 });
        assert_eq!(in_band(nodes.iter().map(|(i, p)| (*i, *p)), &band), ["a"]);
        let wide = Rect::spanning(Point::new(-5.0, 10.0), Point::new(410.0, 20.0));
        assert_eq!(in_band(nodes.iter().map(|(i, p)| (*i, *p)), &wide), ["a", "b"]);
    }

    #[test]
    fn fit_centres_the_graph_and_never_magnifies() {
        let b = bounds([Point::new(0.0, 0.0), Point::new(1000.0, 500.0)]).unwrap();
        assert_eq!(b, Rect { x: 0.0, y: 0.0, w: 1000.0 + NODE_W, h: 500.0 + NODE_H });
        let v = Viewport::fit(b, 800.0, 600.0, 20.0);
        assert!(v.zoom < 1.0);
        let centre = v.to_screen(Point::new(b.x + b.w / 2.0, b.y + b.h / 2.0));
        assert!(close(centre, Point::new(400.0, 300.0)));
        // Every corner is inside the canvas.
        for corner in [Point::new(b.x, b.y), Point::new(b.x + b.w, b.y + b.h)] {
            let s = v.to_screen(corner);
            assert!(s.x >= 19.9 && s.x <= 780.1 && s.y >= 0.0 && s.y <= 600.0);
        }
        let small = Viewport::fit(node_rect(Point::new(10.0, 10.0)), 800.0, 600.0, 20.0);
        assert_eq!(small.zoom, 1.0);
        assert_eq!(bounds(std::iter::empty()), None);
    }

    #[test]
    fn edges_are_curves_between_the_ports() {
        let path = edge_path(Point::new(0.0, 0.0), Point::new(200.0, 100.0));
        assert!(path.starts_with("M 0.0 0.0 C 100.0 0.0"));
        assert!(path.ends_with("200.0 100.0"));
        assert_eq!(edge_midpoint(Point::new(0.0, 0.0), Point::new(200.0, 100.0)), Point::new(100.0, 50.0));
        assert_eq!(snap(14.0), 10.0);
        assert_eq!(snap(-16.0), -20.0);
    }
}
