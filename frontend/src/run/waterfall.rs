//! The span timeline: one row per span, depth-first by parent (children by start time), each
//! bar placed by its start and end relative to the instance's start. Open spans run to `now`.
//! A map's items (thousands, maybe) fold into one row per map attempt, expanded on demand a few
//! hundred at a time.

use crate::run::{RunState, SpanRun};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashSet};
use trellis_model::trace::{SpanKind, SpanStatus};

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub span_id: String,
    pub name: String,
    pub kind: SpanKind,
    pub status: SpanStatus,
    /// How many ancestors the span has in the timeline (the root is 0).
    pub depth: usize,
    /// Milliseconds from the instance's start to the span's start.
    pub offset_ms: i64,
    /// The span's length so far (to `now` while it is open).
    pub duration_ms: i64,
    pub open: bool,
    /// The bar's left edge and width as percentages of the timeline.
    pub left: f64,
    pub width: f64,
    /// `key: value` lines of the span's attributes, for its details.
    pub attributes: Vec<(String, String)>,
    pub error: Option<String>,
    /// Set on the rows that stand for a map's items rather than one span.
    pub fold: Option<Fold>,
}

/// The narrowest bar drawn, in percent, so instant spans stay visible and clickable.
pub const MIN_WIDTH: f64 = 0.4;
/// Item rows an expanded map shows at first, and how many more each "show more" adds.
pub const ITEMS_SHOWN: usize = 200;

/// A row that stands for a map attempt's items rather than one span.
#[derive(Debug, Clone, PartialEq)]
pub enum Fold {
    /// The items of the map attempt span `parent`: one row for all, expanded or not.
    Items { parent: String, expanded: bool },
    /// Items of `parent` an expanded map does not draw yet.
    More { parent: String, hidden: usize },
}

/// Where the rows are measured from: the instance's start, the end of the last span, and now.
struct Scale {
    origin: DateTime<Utc>,
    now: DateTime<Utc>,
    total: f64,
}

impl Scale {
    fn bar(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> (i64, i64, f64, f64) {
        let offset_ms = (start - self.origin).num_milliseconds().max(0);
        let duration_ms = (end - start).num_milliseconds();
        let left = (offset_ms as f64 / self.total * 100.0).clamp(0.0, 100.0);
        let width = (duration_ms as f64 / self.total * 100.0).max(MIN_WIDTH).min(100.0 - left);
        (offset_ms, duration_ms, left, width)
    }

    fn end_of(&self, s: &SpanRun) -> DateTime<Utc> {
        s.span.end.unwrap_or(self.now).max(s.span.start)
    }
}

/// Whether a span is one item of a map (its attempts), drawn folded under the map's attempt.
pub fn is_item(s: &SpanRun) -> bool {
    s.span.attributes.contains_key("trellis.map_index")
}

fn text(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// What is still to be drawn, depth-first.
enum Next<'a> {
    Span(&'a SpanRun, usize),
    Items(&'a str, Vec<&'a SpanRun>, usize),
}

/// The rows as of `now`; `now` is raised to the latest entry's time so a lagging browser clock
/// never makes open spans shrink or end before they started. A map attempt's items fold into
/// one row; `shown` holds the map attempts expanded, with how many of their items to draw.
pub fn rows(state: &RunState, now: DateTime<Utc>, shown: &BTreeMap<String, usize>) -> Vec<Row> {
    let Some(origin) = state.origin() else { return Vec::new() };
    let now = state.latest.map_or(now, |l| l.max(now));
    let mut scale = Scale { origin, now, total: 1.0 };
    let last = state.spans.values().map(|s| (scale.end_of(s) - origin).num_milliseconds()).max();
    scale.total = last.unwrap_or(0).max(1) as f64;

    // A map's items (thousands) are kept apart: they are counted, and sorted only when drawn.
    let mut children: BTreeMap<Option<&str>, Vec<&SpanRun>> = BTreeMap::new();
    let mut items: BTreeMap<&str, Vec<&SpanRun>> = BTreeMap::new();
    for s in state.spans.values() {
        // A parent outside this history (the caller's traceparent span) makes a root.
        let parent = s.span.parent_span_id.as_deref().filter(|p| state.spans.contains_key(*p));
        match parent {
            Some(p) if is_item(s) => items.entry(p).or_default().push(s),
            _ => children.entry(parent).or_default().push(s),
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| a.span.start.cmp(&b.span.start).then(a.order.cmp(&b.order)));
    }

    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let roots = children.get(&None).map(|l| l.iter().rev().map(|s| Next::Span(s, 0)).collect());
    let mut stack: Vec<Next<'_>> = roots.unwrap_or_default();
    while let Some(next) = stack.pop() {
        let (s, depth) = match next {
            Next::Span(s, depth) => (s, depth),
            Next::Items(parent, items, depth) => {
                out.extend(item_rows(&scale, parent, items, depth, shown.get(parent).copied()));
                continue;
            }
        };
        if !seen.insert(s.span.span_id.as_str()) {
            continue;
        }
        out.push(span_row(&scale, s, depth));
        let id = s.span.span_id.as_str();
        if let Some(kids) = children.get(&Some(id)) {
            stack.extend(kids.iter().rev().map(|k| Next::Span(k, depth + 1)));
        }
        if let Some(items) = items.remove(id) {
            stack.push(Next::Items(id, items, depth + 1));
        }
    }
    out
}

fn span_row(scale: &Scale, s: &SpanRun, depth: usize) -> Row {
    let (offset_ms, duration_ms, left, width) = scale.bar(s.span.start, scale.end_of(s));
    Row {
        span_id: s.span.span_id.clone(),
        name: s.span.name.clone(),
        kind: s.span.kind,
        status: s.span.status,
        depth,
        offset_ms,
        duration_ms,
        open: s.span.end.is_none(),
        left,
        width,
        attributes: s.span.attributes.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
        error: s.span.attributes.get("error").map(text),
        fold: None,
    }
}

/// The row of a map attempt's items ("each: 100 items (2 failed)"), then, when expanded, the
/// first `shown` of them by index and a row for the rest.
fn item_rows(scale: &Scale, parent: &str, mut items: Vec<&SpanRun>, depth: usize, shown: Option<usize>) -> Vec<Row> {
    let failed = items.iter().filter(|s| s.span.status == SpanStatus::Error).count();
    let node = items[0].span.attributes.get("trellis.map_node").map(text).unwrap_or_default();
    let name = match failed {
        0 => format!("{node}: {} items", items.len()),
        n => format!("{node}: {} items ({n} failed)", items.len()),
    };
    let start = items.iter().map(|s| s.span.start).min().unwrap_or(scale.origin);
    let end = items.iter().map(|s| scale.end_of(s)).max().unwrap_or(start);
    let (offset_ms, duration_ms, left, width) = scale.bar(start, end);
    let status = if failed > 0 { SpanStatus::Error } else { SpanStatus::Ok };
    let fold = Some(Fold::Items { parent: parent.to_owned(), expanded: shown.is_some() });
    let group = Row {
        span_id: format!("{parent}:items"),
        name,
        kind: SpanKind::Node,
        status,
        depth,
        offset_ms,
        duration_ms,
        open: false,
        left,
        width,
        attributes: Vec::new(),
        error: None,
        fold,
    };
    let Some(shown) = shown else { return vec![group] };
    let index = |s: &SpanRun| s.span.attributes.get("trellis.map_index").and_then(|v| v.as_u64()).unwrap_or(0);
    items.sort_by_key(|s| index(s));
    let hidden = items.len().saturating_sub(shown);
    let mut out = vec![group];
    out.extend(items.iter().take(shown).map(|s| span_row(scale, s, depth + 1)));
    if hidden > 0 {
        let more = Fold::More { parent: parent.to_owned(), hidden };
        let mut row = Row {
            span_id: format!("{parent}:more"),
            name: format!("show more ({hidden} not shown)"),
            ..out[0].clone()
        };
        (row.depth, row.fold, row.width) = (depth + 1, Some(more), 0.0);
        out.push(row);
    }
    out
}

/// A row's height in CSS pixels (`.span-row` in style.css is as tall) and the list's visible
/// height (`.spans`' max-height): the list draws only the rows in view.
pub const ROW_PX: f64 = 24.0;
pub const LIST_PX: f64 = 380.0;
/// Rows drawn beyond each edge of the view, so a quick scroll does not show blanks first.
const OVERSCAN: usize = 12;

/// The rows to draw when the list of `total` rows is scrolled `scroll_top` pixels down: a
/// run of a thousand spans draws a few dozen rows, the rest stand in as empty space.
pub fn window(total: usize, scroll_top: f64) -> std::ops::Range<usize> {
    let shown = (LIST_PX / ROW_PX).ceil() as usize;
    // A list that shrank (a map folded) may not have told its new scroll position yet.
    let first = ((scroll_top.max(0.0) / ROW_PX) as usize).min(total.saturating_sub(shown));
    let start = first.saturating_sub(OVERSCAN).min(total);
    let end = (first + shown + OVERSCAN).min(total);
    start..end.max(start)
}

/// A duration people can read: `850 ms`, `2.4 s`, `3 min 05 s`.
pub fn duration(ms: i64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms} ms"),
        ms if ms < 60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        ms => format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}
