//! A node's attempts as its details panel lists them: read from the attempt spans the history
//! carried (`trellis.node`, `trellis.attempt`, `error`, a script's `trellis.logs`), oldest first.

use super::RunState;
use chrono::{DateTime, Utc};
use trellis_model::trace::{SpanKind, SpanStatus};

#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub number: i64,
    pub start: DateTime<Utc>,
    pub end: Option<DateTime<Utc>>,
    pub duration_ms: Option<i64>,
    /// `ok`, `error`, `unset` (canceled), or `running` while the span is open.
    pub outcome: String,
    pub error: Option<String>,
    /// A script's `console` lines (bounded by the server), once the attempt has ended.
    pub logs: Vec<String>,
}

/// The attempts of `node` the history has told so far.
pub fn attempts(run: &RunState, node: &str) -> Vec<Attempt> {
    let mut rows: Vec<Attempt> = run
        .spans
        .values()
        .map(|s| &s.span)
        .filter(|s| s.kind == SpanKind::Node && s.attributes.get("trellis.node").and_then(|v| v.as_str()) == Some(node))
        .map(|s| Attempt {
            number: s.attributes.get("trellis.attempt").and_then(|v| v.as_i64()).unwrap_or(0),
            start: s.start,
            end: s.end,
            duration_ms: s.duration_ms(),
            outcome: match (s.end, s.status) {
                (None, _) => "running".to_owned(),
                (Some(_), status) => status.as_str().to_owned(),
            },
            error: s.attributes.get("error").and_then(|v| v.as_str()).map(str::to_owned),
            logs: s
                .attributes
                .get("trellis.logs")
                .and_then(|v| v.as_array())
                .map(|lines| lines.iter().filter_map(|l| l.as_str()).map(str::to_owned).collect())
                .unwrap_or_default(),
        })
        .collect();
    rows.sort_by_key(|a| (a.start, a.number));
    rows
}

/// Whether the outcome reads as a failure on screen.
pub fn failed(a: &Attempt) -> bool {
    a.outcome == SpanStatus::Error.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::SpanRun;
    use serde_json::json;
    use trellis_model::trace::Span;

    fn span(id: &str, node: &str, attempt: i64, end: bool, status: SpanStatus, error: Option<&str>) -> SpanRun {
        let start = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&Utc)
            + chrono::Duration::seconds(attempt);
        let mut attributes = serde_json::Map::new();
        attributes.insert("trellis.node".into(), json!(node));
        attributes.insert("trellis.attempt".into(), json!(attempt));
        if let Some(e) = error {
            attributes.insert("error".into(), json!(e));
            attributes.insert("trellis.logs".into(), json!(["about to fail", "[warn] careful"]));
        }
        SpanRun {
            span: Span {
                trace_id: "t".into(),
                span_id: id.into(),
                parent_span_id: None,
                name: format!("fail {node}"),
                kind: SpanKind::Node,
                status,
                start,
                end: end.then(|| start + chrono::Duration::milliseconds(250)),
                attributes,
            },
            order: 0,
        }
    }

    #[test]
    fn a_nodes_attempts_come_oldest_first_with_their_errors() {
        let mut run = RunState::default();
        run.spans.insert("b".into(), span("b", "x", 2, false, SpanStatus::Unset, None));
        run.spans.insert("a".into(), span("a", "x", 1, true, SpanStatus::Error, Some("boom")));
        run.spans.insert("c".into(), span("c", "other", 1, true, SpanStatus::Ok, None));
        let rows = attempts(&run, "x");
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].number, rows[0].outcome.as_str(), rows[0].error.as_deref()), (1, "error", Some("boom")));
        assert_eq!(rows[0].duration_ms, Some(250));
        assert_eq!(rows[0].logs, ["about to fail", "[warn] careful"]);
        assert!(rows[1].logs.is_empty());
        assert!(failed(&rows[0]));
        assert_eq!((rows[1].number, rows[1].outcome.as_str()), (2, "running"));
        assert!(attempts(&run, "missing").is_empty());
    }
}
