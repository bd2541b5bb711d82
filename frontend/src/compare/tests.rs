use super::*;
use serde_json::json;

fn definition(value: Value) -> Definition {
    serde_json::from_value(value).unwrap()
}

/// A branching workflow: `check` then `big` or `small`, both into `done`.
fn branching() -> Definition {
    definition(json!({
        "nodes": [{"id": "done", "type": "noop"}, {"id": "small", "type": "noop"}, {"id": "big", "type": "noop"},
                  {"id": "check", "type": "branch"}],
        "edges": [{"from": "check", "to": "big", "when": "big"}, {"from": "check", "to": "small", "when": "small"},
                  {"from": "big", "to": "done", "when": "always"}, {"from": "small", "to": "done", "when": "always"}]
    }))
}

/// A run of `workflow` v`version` whose nodes are `(id, status, attempts, ms, output)`.
fn run(workflow: &str, version: i64, nodes: &[(&str, &str, i32, Option<i64>, Value)]) -> InstanceDetail {
    let at = |ms: i64| format!("2026-01-01T00:00:{:02}.{:03}Z", ms / 1000, ms % 1000);
    let nodes: Vec<Value> = nodes
        .iter()
        .map(|(id, status, attempts, ms, output)| {
            json!({"id": id, "status": status, "attempts": attempts, "started_at": ms.map(|_| at(0)),
                   "ended_at": ms.map(at), "output": output, "error": null})
        })
        .collect();
    serde_json::from_value(json!({
        "id": "i", "workflow_id": workflow, "workflow_name": workflow, "version": version, "status": "succeeded",
        "key": null, "error": null, "created_at": at(0), "started_at": at(0), "ended_at": at(0),
        "input": {}, "output": null, "nodes": nodes
    }))
    .unwrap()
}

#[test]
fn nodes_come_in_topological_order_of_both_graphs() {
    let def = branching();
    assert_eq!(order(&def, &def), ["check", "small", "big", "done"].map(String::from));
    let other = definition(json!({"nodes": [{"id": "check", "type": "noop"}, {"id": "audit", "type": "noop"},
        {"id": "first", "type": "noop"}], "edges": [{"from": "first", "to": "check"}, {"from": "done", "to": "audit"}]}));
    // `first` feeds `check` in B, so it comes before it; `audit` follows `done`.
    assert_eq!(order(&def, &other), ["first", "check", "small", "big", "done", "audit"].map(String::from));
}

#[test]
fn a_cycle_made_by_two_versions_together_still_lists_every_node_once() {
    let a = definition(json!({"nodes": [{"id": "x", "type": "noop"}, {"id": "y", "type": "noop"}],
        "edges": [{"from": "x", "to": "y"}]}));
    let b = definition(json!({"nodes": [{"id": "x", "type": "noop"}, {"id": "y", "type": "noop"}],
        "edges": [{"from": "y", "to": "x"}]}));
    assert_eq!(order(&a, &b), ["x", "y"].map(String::from));
}

#[test]
fn the_first_difference_is_the_branch_taken_not_what_follows_it() {
    let def = branching();
    let a = run(
        "w",
        1,
        &[
            ("check", "succeeded", 1, Some(5), json!({"outcome": "big"})),
            ("big", "succeeded", 1, Some(1200), json!(1)),
            ("small", "skipped", 0, None, Value::Null),
            ("done", "succeeded", 1, Some(10), json!(null)),
        ],
    );
    let b = run(
        "w",
        1,
        &[
            ("check", "succeeded", 1, Some(5), json!({"outcome": "small"})),
            ("big", "skipped", 0, None, Value::Null),
            ("small", "succeeded", 2, Some(300), json!(2)),
            ("done", "succeeded", 1, Some(25), json!(null)),
        ],
    );
    let c = compare(Side { run: &a, definition: &def }, Side { run: &b, definition: &def });
    assert_eq!(c.first_difference.as_deref(), Some("check"), "its output chose the other branch");
    assert_eq!(c.note, None);
    let done = c.rows.iter().find(|r| r.id == "done").unwrap();
    assert!(!done.differs);
    assert_eq!(done.delta_ms(), Some(15));
    let small = c.rows.iter().find(|r| r.id == "small").unwrap();
    assert!(small.differs);
    assert_eq!((small.a.as_ref().unwrap().status, small.b.as_ref().unwrap().attempts), (NodeStatus::Skipped, 2));
    assert_eq!(small.delta_ms(), None, "A never ran it");
}

#[test]
fn equal_runs_have_no_first_difference() {
    let def = branching();
    let a = run("w", 1, &[("check", "succeeded", 1, Some(5), json!({"outcome": "big"}))]);
    let c = compare(Side { run: &a, definition: &def }, Side { run: &a, definition: &def });
    assert_eq!(c.first_difference, None);
    assert!(c.rows.iter().all(|r| !r.differs), "nodes without rows are pending in both");
}

#[test]
fn runs_of_other_versions_or_workflows_compare_by_node_id_with_a_note() {
    let def = branching();
    let smaller = definition(json!({"nodes": [{"id": "check", "type": "noop"}]}));
    let a = run("w", 1, &[("check", "succeeded", 1, Some(5), json!({"outcome": "big"}))]);
    let b = run("w", 2, &[("check", "succeeded", 1, Some(5), json!({"outcome": "big"}))]);
    let c = compare(Side { run: &a, definition: &def }, Side { run: &b, definition: &smaller });
    assert_eq!(c.note.as_deref(), Some("Different versions: A ran v1, B ran v2."));
    assert_eq!(c.first_difference.as_deref(), Some("small"), "a node only A's version has differs");
    assert_eq!(c.rows.iter().find(|r| r.id == "small").unwrap().b, None);
    let other = run("v", 1, &[]);
    let c = compare(Side { run: &a, definition: &def }, Side { run: &other, definition: &def });
    assert!(c.note.unwrap().starts_with("Different workflows: A ran “w”, B ran “v”"));
}

#[test]
fn a_failed_node_s_outcome_is_its_error_not_a_null() {
    let mut failed =
        run("w", 1, &[("fetch", "failed", 1, Some(5), Value::Null), ("ok", "succeeded", 1, Some(5), json!({"n": 1}))]);
    failed.nodes[0].error = Some("HTTP 404 Not Found: no such sku".into());
    assert_eq!(node_outcome(&failed, "fetch"), json!({"error": "HTTP 404 Not Found: no such sku"}));
    assert_eq!(node_outcome(&failed, "ok"), json!({"n": 1}));
    assert_eq!(node_outcome(&failed, "missing"), Value::Null);
}
