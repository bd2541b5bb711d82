//! The span timeline: one row per span, depth-first by parent (children by start time), each
//! bar placed by its start and end relative to the instance's start. Open spans run to `now`.

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
}

/// The narrowest bar drawn, in percent, so instant spans stay visible and clickable.
pub const MIN_WIDTH: f64 = 0.4;

/// The rows as of `now`; `now` is raised to the latest entry's time so a lagging browser clock
/// never makes open spans shrink or end before they started.
pub fn rows(state: &RunState, now: DateTime<Utc>) -> Vec<Row> {
    let Some(origin) = state.origin() else { return Vec::new() };
    let now = state.latest.map_or(now, |l| l.max(now));
    let end_of = |s: &SpanRun| s.span.end.unwrap_or(now).max(s.span.start);
    let total = state.spans.values().map(|s| (end_of(s) - origin).num_milliseconds()).max().unwrap_or(0).max(1) as f64;

    let mut children: BTreeMap<Option<&str>, Vec<&SpanRun>> = BTreeMap::new();
    for s in state.spans.values() {
        // A parent outside this history (the caller's traceparent span) makes a root.
        let parent = s.span.parent_span_id.as_deref().filter(|p| state.spans.contains_key(*p));
        children.entry(parent).or_default().push(s);
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| a.span.start.cmp(&b.span.start).then(a.order.cmp(&b.order)));
    }

    let mut out = Vec::with_capacity(state.spans.len());
    let mut seen = HashSet::new();
    let mut stack: Vec<(&SpanRun, usize)> =
        children.get(&None).map(|l| l.iter().rev().map(|s| (*s, 0)).collect()).unwrap_or_default();
    while let Some((s, depth)) = stack.pop() {
        if !seen.insert(s.span.span_id.as_str()) {
            continue;
        }
        let offset_ms = (s.span.start - origin).num_milliseconds().max(0);
        let duration_ms = (end_of(s) - s.span.start).num_milliseconds();
        let left = (offset_ms as f64 / total * 100.0).clamp(0.0, 100.0);
        let width = (duration_ms as f64 / total * 100.0).max(MIN_WIDTH).min(100.0 - left);
        let attributes = s
            .span
            .attributes
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        out.push(Row {
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
            attributes,
            error: s.span.attributes.get("error").map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)),
        });
        if let Some(kids) = children.get(&Some(s.span.span_id.as_str())) {
            stack.extend(kids.iter().rev().map(|k| (*k, depth + 1)));
        }
    }
    out
}

/// A duration people can read: `850 ms`, `2.4 s`, `3 min 05 s`.
pub fn duration(ms: i64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms} ms"),
        ms if ms < 60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        ms => format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}
