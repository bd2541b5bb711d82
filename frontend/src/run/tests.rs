use super::waterfall::{self, duration};
use super::*;
use crate::designer::definition;
use serde_json::{json, Value};

const T0: &str = "2026-01-01T00:00:00Z";

fn at(ms: i64) -> DateTime<Utc> {
    T0.parse::<DateTime<Utc>>().unwrap() + chrono::Duration::milliseconds(ms)
}

fn entry(seq: i64, ms: i64, event: &str, data: Value) -> HistoryEvent {
    let mut full = json!({"seq": seq, "instance_id": "i1", "at": at(ms), "event": event});
    full.as_object_mut().unwrap().extend(data.as_object().unwrap().clone());
    serde_json::from_value(full).unwrap()
}

fn span(id: &str, parent: Option<&str>, name: &str, kind: &str, start: i64, end: Option<i64>, attrs: Value) -> Value {
    let mut s = json!({"trace_id": "0".repeat(31) + "1", "span_id": id, "parent_span_id": parent, "name": name,
        "kind": kind, "status": (if end.is_some() { "ok" } else { "unset" }), "start": at(start), "attributes": attrs});
    if let Some(e) = end {
        s["end"] = json!(at(e));
    }
    s
}

/// A gate (wait_signal) then a noop: the history up to the gate waiting.
pub(crate) fn gate_waiting() -> Vec<HistoryEvent> {
    vec![
        entry(1, 0, "span_start", span("root", None, "instance", "instance", 0, None, json!({}))),
        entry(2, 0, "instance", json!({"status": "running", "previous": null, "workflow_id": "w"})),
        entry(3, 10, "node", json!({"node": "gate", "status": "running", "previous": "pending", "attempt": 1})),
        entry(
            4,
            10,
            "span_start",
            span("a1", Some("root"), "wait_signal gate", "node", 10, None, json!({"trellis.node": "gate"})),
        ),
        entry(5, 20, "node", json!({"node": "gate", "status": "waiting", "previous": "running", "attempt": 1})),
        entry(
            6,
            20,
            "span_start",
            span("w1", Some("a1"), "signal wait gate", "signal", 20, None, json!({"trellis.node": "gate"})),
        ),
    ]
}

fn run(entries: &[HistoryEvent]) -> RunState {
    let mut s = RunState::default();
    for e in entries {
        s.apply(e);
    }
    s
}

#[test]
fn entries_fold_into_statuses_attempts_and_open_spans() {
    let s = run(&gate_waiting());
    assert_eq!(s.status.as_deref(), Some("running"));
    assert_eq!(s.node_status("gate"), "waiting");
    assert_eq!(s.nodes["gate"].attempt, 1);
    assert_eq!(s.node_status("after"), "pending", "nodes not mentioned yet are pending");
    assert_eq!(s.spans.len(), 3);
    assert_eq!(s.awaiting_signal(), vec!["gate".to_owned()]);
    assert!(!s.is_terminal());
    assert_eq!(s.last_seq, 6);
}

#[test]
fn duplicates_and_unparsable_entries_change_nothing() {
    let mut s = run(&gate_waiting());
    let before = s.clone();
    assert!(!s.apply(&gate_waiting()[2]), "a seq already applied is a duplicate");
    assert!(!s.apply(&entry(7, 30, "node", json!({"status": "failed"}))), "a node entry without its node");
    assert_eq!(s, before);
    assert!(s.apply(&entry(7, 30, "something_new", json!({}))), "unknown kinds are skipped but counted");
    assert_eq!(s.last_seq, 7);
}

#[test]
fn closing_entries_end_spans_and_the_terminal_status_ends_the_run() {
    let mut entries = gate_waiting();
    entries.extend([
        entry(
            7,
            500,
            "span_end",
            span("w1", Some("a1"), "signal wait gate", "signal", 20, Some(500), json!({"trellis.node": "gate"})),
        ),
        entry(8, 510, "node", json!({"node": "gate", "status": "succeeded", "previous": "waiting", "attempt": 1})),
        entry(
            9,
            510,
            "span_end",
            span(
                "a1",
                Some("root"),
                "wait_signal gate",
                "node",
                10,
                Some(510),
                json!({"trellis.node_type": "wait_signal"}),
            ),
        ),
        entry(10, 520, "node", json!({"node": "after", "status": "succeeded", "previous": "pending", "attempt": 1})),
        entry(
            11,
            600,
            "span_end",
            span("root", None, "instance", "instance", 0, Some(600), json!({"trellis.status": "succeeded"})),
        ),
        entry(12, 600, "instance", json!({"status": "succeeded", "previous": "running", "workflow_id": "w"})),
    ]);
    let s = run(&entries);
    assert!(s.is_terminal());
    assert_eq!(s.node_status("gate"), "succeeded");
    assert!(s.awaiting_signal().is_empty());
    let a1 = &s.spans["a1"].span;
    assert_eq!(a1.end, Some(at(510)));
    assert_eq!(a1.attributes["trellis.node"], "gate", "attributes from the opening entry are kept");
    assert_eq!(a1.attributes["trellis.node_type"], "wait_signal");
}

#[test]
fn a_failed_instance_keeps_its_error() {
    let mut s = RunState::default();
    s.apply(&entry(
        1,
        0,
        "instance",
        json!({"status": "failed", "previous": "running", "workflow_id": "w", "error": "boom"}),
    ));
    assert!(s.is_terminal());
    assert_eq!(s.error.as_deref(), Some("boom"));
}

#[test]
fn the_waterfall_nests_by_parent_and_places_bars_relative_to_the_start() {
    let mut entries = gate_waiting();
    entries.push(entry(
        7,
        40,
        "span_start",
        span("q", Some("root"), "queue wait", "queue", 5, Some(8), json!({"error": "x"})),
    ));
    let s = run(&entries);
    let rows = waterfall::rows(&s, at(100), &Default::default());
    let order: Vec<(&str, usize)> = rows.iter().map(|r| (r.span_id.as_str(), r.depth)).collect();
    assert_eq!(order, [("root", 0), ("q", 1), ("a1", 1), ("w1", 2)], "children by start time, depth-first");
    let root = &rows[0];
    assert!(root.open);
    assert_eq!((root.offset_ms, root.duration_ms), (0, 100));
    assert_eq!((root.left, root.width), (0.0, 100.0));
    let w1 = &rows[3];
    assert_eq!((w1.offset_ms, w1.duration_ms), (20, 80), "open spans run to now");
    assert!((w1.left - 20.0).abs() < 1e-9 && (w1.width - 80.0).abs() < 1e-9);
    let q = &rows[1];
    assert!(!q.open);
    assert_eq!(q.error.as_deref(), Some("x"));
    assert!(q.width >= waterfall::MIN_WIDTH, "short spans stay visible");
}

#[test]
fn open_spans_grow_and_a_lagging_clock_never_shrinks_them() {
    let s = run(&gate_waiting());
    let later = waterfall::rows(&s, at(1000), &Default::default());
    assert_eq!(later[0].duration_ms, 1000);
    let behind = waterfall::rows(&s, at(-5000), &Default::default());
    assert_eq!(behind[0].duration_ms, 20, "now is at least the latest entry's time");
    assert!(behind.iter().all(|r| r.width >= 0.0 && r.left + r.width <= 100.0 + 1e-9));
}

#[test]
fn a_parent_outside_the_history_makes_a_root() {
    let mut s = RunState::default();
    s.apply(&entry(1, 0, "span_start", span("root", Some("caller"), "instance", "instance", 0, None, json!({}))));
    let rows = waterfall::rows(&s, at(10), &Default::default());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].depth, 0);
    assert!(waterfall::rows(&RunState::default(), at(0), &Default::default()).is_empty());
}

#[test]
fn durations_read_well() {
    assert_eq!(duration(850), "850 ms");
    assert_eq!(duration(2_400), "2.4 s");
    assert_eq!(duration(185_000), "3 min 05 s");
}

#[test]
fn the_graph_is_laid_out_when_positions_are_missing_and_classed_by_status() {
    let def = definition(json!({
        "nodes": [{"id": "gate", "type": "wait_signal"}, {"id": "after", "type": "noop"}],
        "edges": [{"from": "gate", "to": "after"}]
    }));
    let placed = graph::placed(&def);
    let x = |id: &str| placed.nodes.iter().find(|n| n.id == id).unwrap().position.unwrap().x;
    assert!(x("after") > x("gate"), "laid out left to right");
    let scene = graph::scene(&placed, &run(&gate_waiting()));
    assert_eq!(scene.node("gate").unwrap().class, "run run-waiting");
    assert_eq!(scene.node("after").unwrap().class, "run run-pending");
    assert!(scene.edge("gate", "after").is_some());
}

#[test]
fn the_legend_names_every_coloured_status_in_order() {
    let legend = graph::legend();
    let classes: Vec<&str> = legend.iter().map(|(class, _)| class.as_str()).collect();
    assert_eq!(
        classes,
        [
            "run-pending",
            "run-running",
            "run-waiting",
            "run-succeeded",
            "run-failed",
            "run-skipped",
            "run-canceled",
            "run-timed_out"
        ]
    );
    assert_eq!(legend.last().unwrap().1, "timed out");
}

#[test]
fn a_map_node_keeps_its_latest_progress_through_its_end() {
    let progress = |done: u32| json!({"total": 3, "succeeded": done, "failed": 0, "running": 3 - done});
    let s = run(&[
        entry(1, 0, "node", json!({"node": "each", "status": "running", "previous": "pending", "attempt": 1})),
        entry(
            2,
            5,
            "node",
            json!({"node": "each", "status": "running", "previous": "running", "attempt": 1,
            "items": progress(1)}),
        ),
        entry(
            3,
            9,
            "node",
            json!({"node": "each", "status": "running", "previous": "running", "attempt": 1,
            "items": progress(3)}),
        ),
        entry(4, 9, "node", json!({"node": "each", "status": "succeeded", "previous": "running", "attempt": 1})),
    ]);
    let each = &s.nodes["each"];
    assert_eq!(each.status, "succeeded");
    assert_eq!(each.items.map(|p| p.succeeded), Some(3));
    let retried = {
        let mut s = s.clone();
        s.apply(&entry(
            5,
            20,
            "node",
            json!({"node": "each", "status": "running", "previous": "failed", "attempt": 2}),
        ));
        s
    };
    assert_eq!(retried.nodes["each"].items, None, "a new attempt does not inherit the last one's progress");
}

/// A map attempt `m1` under the root with `n` ended items, those in `failed` with an error.
fn map_with_items(n: u32, failed: &[u32]) -> RunState {
    let mut entries = vec![
        entry(1, 0, "span_start", span("root", None, "instance", "instance", 0, None, json!({}))),
        entry(
            2,
            0,
            "span_start",
            span("m1", Some("root"), "map each", "node", 0, None, json!({"trellis.node": "each"})),
        ),
    ];
    for i in 0..n {
        let mut s = span(
            &format!("it{i}"),
            Some("m1"),
            &format!("transform each[{i}]"),
            "node",
            1,
            Some(5),
            json!({"trellis.map_node": "each", "trellis.map_index": i}),
        );
        if failed.contains(&i) {
            s["status"] = json!("error");
            s["attributes"]["error"] = json!("boom");
        }
        entries.push(entry(3 + i as i64, 5, "span_end", s));
    }
    run(&entries)
}

#[test]
fn a_maps_items_fold_into_one_row_until_expanded() {
    let s = map_with_items(500, &[3, 7]);
    let rows = waterfall::rows(&s, at(10), &Default::default());
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["instance", "map each", "each: 500 items (2 failed)"]);
    let group = &rows[2];
    assert_eq!((group.depth, group.status), (2, trellis_model::trace::SpanStatus::Error));
    assert_eq!(group.fold, Some(waterfall::Fold::Items { parent: "m1".into(), expanded: false }));

    let shown = [("m1".to_owned(), waterfall::ITEMS_SHOWN)].into_iter().collect();
    let rows = waterfall::rows(&s, at(10), &shown);
    assert_eq!(rows.len(), 3 + waterfall::ITEMS_SHOWN + 1, "the first items by index, then a row for the rest");
    assert_eq!(rows[3].name, "transform each[0]");
    assert_eq!(rows[3].depth, 3);
    assert_eq!(rows[6].error.as_deref(), Some("boom"));
    let more = rows.last().unwrap();
    assert_eq!(more.fold, Some(waterfall::Fold::More { parent: "m1".into(), hidden: 300 }));

    let all = [("m1".to_owned(), 1_000)].into_iter().collect();
    assert_eq!(waterfall::rows(&s, at(10), &all).len(), 3 + 500);
    let fine = map_with_items(3, &[]);
    assert_eq!(waterfall::rows(&fine, at(10), &Default::default())[2].name, "each: 3 items");
}

#[test]
fn the_timeline_draws_only_the_rows_in_view() {
    assert_eq!(waterfall::window(0, 0.0), 0..0);
    assert_eq!(waterfall::window(5, 0.0), 0..5, "a short list is drawn whole");
    let top = waterfall::window(1000, 0.0);
    assert_eq!(top.start, 0);
    assert!(top.end >= (waterfall::LIST_PX / waterfall::ROW_PX) as usize && top.end < 40, "{top:?}");
    let middle = waterfall::window(1000, 500.0 * waterfall::ROW_PX);
    assert!(middle.contains(&500) && middle.contains(&510) && middle.len() < 45, "{middle:?}");
    let bottom = waterfall::window(1000, 1_000_000.0);
    assert!(bottom.end == 1000 && bottom.len() > 16, "scrolled past the end draws the last rows: {bottom:?}");
    assert_eq!(waterfall::window(1000, -5.0).start, 0);
}
