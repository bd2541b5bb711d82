//! The live run view's logic as plain Rust, native-tested: the instance's history entries (from
//! `GET /instances/{id}/events`) folded into what the page draws. The components in
//! `components/run/` only feed entries in and draw what these modules compute.
//!
//! * [`RunState::apply`]: one entry → instance status, node statuses and attempts, the spans.
//! * [`waterfall`]: the span timeline's rows (nested by parent, offsets from the instance start).
//! * [`graph`]: the workflow drawn with the designer's scene code, nodes classed by run status.

pub mod actions;
pub mod attempts;
pub mod batch;
pub mod camera;
pub mod family;
pub mod graph;
pub mod items;
pub mod queue_text;
pub mod retry_preview;
pub mod slow;
pub mod waterfall;

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use trellis_model::trace::{EventKind, HistoryEvent, InstanceChange, ItemProgress, NodeChange, Span, SpanKind};
use trellis_model::InstanceStatus;

/// What the run knows about one node so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeRun {
    pub status: String,
    pub attempt: u32,
    pub error: Option<String>,
    pub outcome: Option<String>,
    /// A `map` node's progress, as its latest entry that carried one told it.
    pub items: Option<ItemProgress>,
}

/// A span as the history has told it so far; `end` is `None` while it is open.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRun {
    pub span: Span,
    /// The order spans were first seen in, to break ties between equal start times.
    pub order: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunState {
    /// The last instance status the history gave, with its error.
    pub status: Option<String>,
    pub error: Option<String>,
    /// The latest note on the instance that changed nothing else (a failure handler that
    /// could not be started).
    pub note: Option<String>,
    pub nodes: BTreeMap<String, NodeRun>,
    pub spans: BTreeMap<String, SpanRun>,
    /// The highest `seq` applied; entries at or below it are duplicates and ignored.
    pub last_seq: i64,
    /// The latest `at` seen: the server's idea of "now", so open spans never shrink when the
    /// browser's clock lags the server's.
    pub latest: Option<DateTime<Utc>>,
}

impl RunState {
    /// Folds one history entry in. Returns false (and changes nothing) for a duplicate or an
    /// entry whose payload does not parse.
    pub fn apply(&mut self, entry: &HistoryEvent) -> bool {
        if entry.seq <= self.last_seq {
            return false;
        }
        let applied = match entry.kind() {
            Some(EventKind::Instance) => entry.payload::<InstanceChange>().map(|c| match c.note {
                // A note leaves the status and its error as they were.
                Some(note) => self.note = Some(note),
                None => {
                    self.status = Some(c.status);
                    self.error = c.error;
                }
            }),
            Some(EventKind::Node) => entry.payload::<NodeChange>().map(|c| {
                // The entry that ends a map may not repeat its progress: keep the attempt's last one.
                let known = self.nodes.get(&c.node).filter(|n| n.attempt == c.attempt);
                let items = c.items.or_else(|| known.and_then(|n| n.items));
                let run = NodeRun { status: c.status, attempt: c.attempt, error: c.error, outcome: c.outcome, items };
                self.nodes.insert(c.node, run);
            }),
            Some(EventKind::SpanStart | EventKind::SpanEnd) => entry.payload::<Span>().map(|s| self.put_span(s)),
            // Counts belong to the dashboard feed; a kind a newer server added is skipped.
            Some(EventKind::Counts) | None => Some(()),
        };
        if applied.is_none() {
            return false;
        }
        self.last_seq = entry.seq;
        self.latest = Some(self.latest.map_or(entry.at, |l| l.max(entry.at)));
        true
    }

    fn put_span(&mut self, span: Span) {
        let order = self.spans.len();
        match self.spans.get_mut(&span.span_id) {
            Some(known) => {
                // A closing entry carries the whole span; keep attributes the opening one had.
                let mut attributes = std::mem::take(&mut known.span.attributes);
                attributes.extend(span.attributes.clone());
                known.span = Span { attributes, ..span };
            }
            None => {
                self.spans.insert(span.span_id.clone(), SpanRun { span, order });
            }
        }
    }

    /// True once the history has reached a terminal instance status: the stream ends there.
    pub fn is_terminal(&self) -> bool {
        self.status.as_deref().and_then(InstanceStatus::parse).is_some_and(|s| s.is_terminal())
    }

    /// A node's status for drawing; nodes the history has not mentioned yet are `pending`.
    pub fn node_status(&self, id: &str) -> &str {
        self.nodes.get(id).map_or("pending", |n| n.status.as_str())
    }

    /// Nodes waiting on a signal: `waiting` nodes with an open signal span naming them.
    pub fn awaiting_signal(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(id, n)| {
                n.status == "waiting"
                    && self.spans.values().any(|s| {
                        s.span.kind == SpanKind::Signal
                            && s.span.end.is_none()
                            && span_node(&s.span).as_deref() == Some(id.as_str())
                    })
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// When the run began: the root span's start, else the earliest span's.
    pub fn origin(&self) -> Option<DateTime<Utc>> {
        let root = self.spans.values().filter(|s| s.span.parent_span_id.is_none() || s.span.kind == SpanKind::Instance);
        root.map(|s| s.span.start).min().or_else(|| self.spans.values().map(|s| s.span.start).min())
    }
}

/// The node a span belongs to (its `trellis.node` attribute), if any.
pub fn span_node(span: &Span) -> Option<String> {
    span.attributes.get("trellis.node").and_then(|v| v.as_str()).map(str::to_owned)
}

#[cfg(test)]
pub(crate) mod tests;
