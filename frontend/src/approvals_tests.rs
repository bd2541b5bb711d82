use super::*;
use chrono::Duration;
use serde_json::json;
use trellis_model::api::ApprovalDecision;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn decision(user: &str, verdict: &str) -> ApprovalDecision {
    ApprovalDecision {
        user: user.into(),
        decision: verdict.into(),
        response: Value::Null,
        comment: None,
        at: at("2025-03-04T05:06:07Z"),
    }
}

fn approval(status: ApprovalStatus, required: u32, decisions: Vec<ApprovalDecision>) -> Approval {
    let nil = "00000000-0000-0000-0000-000000000000";
    let mut a: Approval = serde_json::from_value(json!({
        "id": nil, "instance_id": nil, "workflow_id": nil, "workflow_name": "Refunds", "node": "ask",
        "attempt": 1, "title": "Refund 30 EUR?", "description": null, "assignees": {"users": ["ann"]},
        "required": required, "allow_starter": false, "form": null, "status": "open", "decisions": [],
        "started_by": "sam", "created_at": "2025-03-04T05:00:00Z", "due_at": null, "closed_at": null,
        "can_decide": false
    }))
    .unwrap();
    a.status = status;
    a.decisions = decisions;
    a
}

fn problem(status: u16, detail: Option<&str>) -> ApiError {
    ApiError::Problem(trellis_model::api::Problem {
        kind: "about:blank".into(),
        title: "Refused".into(),
        status,
        detail: detail.map(Into::into),
        errors: Vec::new(),
    })
}

#[test]
fn each_tab_asks_for_its_own_list() {
    assert_eq!(filters(Inbox::Mine, Shown::Closed), [("mine", "true")]);
    assert_eq!(filters(Inbox::Decided, Shown::Open), [("decided", "true")]);
    assert_eq!(filters(Inbox::All, Shown::Open), [("status", "open")]);
    assert_eq!(filters(Inbox::All, Shown::Closed), [("status", "closed")]);
    assert!(filters(Inbox::All, Shown::Any).is_empty());
}

#[test]
fn a_tab_reads_back_from_its_address() {
    for tab in Inbox::TABS {
        assert_eq!(Inbox::parse(Some(tab.param())), tab);
    }
    for shown in Shown::CHOICES {
        assert_eq!(Shown::parse(Some(shown.param())), shown);
    }
    assert_eq!(Inbox::parse(Some("nonsense")), Inbox::Mine);
    assert_eq!(Shown::parse(None), Shown::Open);
    assert_eq!(inbox_page(Inbox::Mine, Shown::Closed), "/approvals");
    assert_eq!(inbox_page(Inbox::Decided, Shown::Open), "/approvals?show=decided");
    assert_eq!(inbox_page(Inbox::All, Shown::Closed), "/approvals?show=all&status=closed");
}

#[test]
fn an_empty_inbox_says_what_an_approval_is() {
    assert!(empty_text(Inbox::Mine, Shown::Open).contains("approval node"));
    assert!(empty_text(Inbox::All, Shown::Any).contains("designer"));
}

#[test]
fn progress_counts_approvals_while_open_and_says_how_it_closed() {
    let open = approval(ApprovalStatus::Open, 2, vec![decision("ann", "approved")]);
    assert_eq!(progress(&open, None), "1 of 2 approvals");
    assert_eq!(progress(&open, Some("ann")), "1 of 2 approvals · you approved");
    let approved = approval(
        ApprovalStatus::Approved,
        3,
        vec![decision("a", "approved"), decision("b", "approved"), decision("c", "approved")],
    );
    assert_eq!(progress(&approved, Some("zed")), "Approved by a, b and c");
    let rejected =
        approval(ApprovalStatus::Rejected, 2, vec![decision("ann", "approved"), decision("bob", "rejected")]);
    assert_eq!(progress(&rejected, Some("bob")), "Rejected by bob · you rejected");
    assert_eq!(progress(&approval(ApprovalStatus::TimedOut, 1, vec![]), None), "Timed out before it was decided");
    assert!(closing(&approval(ApprovalStatus::Canceled, 1, vec![])).starts_with("Canceled"));
}

#[test]
fn statuses_read_as_words() {
    assert_eq!(status_words(ApprovalStatus::TimedOut), "timed out");
    assert_eq!(status_words(ApprovalStatus::Approved), "approved");
}

#[test]
fn assignees_are_named_in_words() {
    let a = Assignees {
        users: vec!["ann".into()],
        roles: vec!["operator".into(), "admin".into()],
        groups: vec!["finance".into()],
    };
    assert_eq!(
        who_may_decide(&a),
        ["ann", "anyone with role operator or higher", "admins", "members of group finance"]
    );
}

#[test]
fn times_read_relative_to_now() {
    let now = at("2025-03-10T12:00:00Z");
    assert_eq!(ago(&(now - Duration::seconds(20)), now), "just now");
    assert_eq!(ago(&(now - Duration::minutes(5)), now), "5 min ago");
    assert_eq!(ago(&(now - Duration::hours(3)), now), "3 h ago");
    assert_eq!(ago(&(now - Duration::hours(30)), now), "1 day ago");
    assert_eq!(ago(&(now - Duration::days(3)), now), "3 days ago");
    assert_eq!(ago(&(now - Duration::days(30)), now), "2025-02-08 12:00 UTC");
    assert_eq!(ago(&(now + Duration::seconds(5)), now), "just now", "a clock a little behind the server's");
    assert_eq!(due_in(&(now + Duration::minutes(90)), now), "in 1 h");
    assert_eq!(due_in(&(now + Duration::minutes(5)), now), "in 5 min");
    assert_eq!(due_in(&(now + Duration::days(3)), now), "in 3 days");
    assert_eq!(due_in(&(now - Duration::minutes(1)), now), "now");
}

#[test]
fn the_page_says_why_someone_may_not_decide() {
    let mut a = approval(ApprovalStatus::Open, 2, vec![decision("ann", "approved")]);
    assert_eq!(why_not(&a, Some("ann")).unwrap(), "You approved it already; the others named still decide.");
    assert!(why_not(&a, Some("sam")).unwrap().starts_with("You started this run"));
    assert!(why_not(&a, Some("eve")).unwrap().starts_with("Only the people named"));
    a.allow_starter = true;
    assert!(why_not(&a, Some("sam")).unwrap().starts_with("Only the people named"));
    a.can_decide = true;
    assert_eq!(why_not(&a, Some("eve")), None);
    assert_eq!(why_not(&approval(ApprovalStatus::Approved, 1, vec![]), Some("eve")), None);
}

#[test]
fn a_refused_decision_says_what_happened() {
    assert_eq!(
        decision_problem(&problem(403, Some("you are not an assignee"))),
        "You may not decide this approval: you are not an assignee."
    );
    assert_eq!(
        decision_problem(&problem(409, Some("you decided it already."))),
        "It was decided already or has closed: you decided it already. It now shows where it stands."
    );
    assert_eq!(
        decision_problem(&problem(409, None)),
        "It was decided already or has closed. It now shows where it stands."
    );
    assert!(decision_problem(&problem(413, None)).starts_with("Too long to keep"));
    assert_eq!(
        decision_problem(&problem(422, Some("`response` must be an object"))),
        "The answer does not fit the form: `response` must be an object."
    );
    let mut with_paths = problem(422, Some("x"));
    if let ApiError::Problem(p) = &mut with_paths {
        p.errors.push(
            serde_json::from_value(
                json!({"code": "response", "message": "\"amount\" is a required property", "path": ""}),
            )
            .unwrap(),
        );
    }
    assert_eq!(decision_problem(&with_paths), "The answer does not fit the form: see the marked fields.");
    assert!(decision_problem(&ApiError::Transport("down".into())).starts_with("Could not reach"));
}

#[test]
fn an_over_long_comment_is_caught_before_it_is_sent() {
    assert_eq!(comment_problem("fine"), None);
    assert!(comment_problem(&"é".repeat(MAX_COMMENT_BYTES / 2 + 1)).unwrap().contains("at most"));
}

#[test]
fn earlier_outputs_are_the_succeeded_nodes_but_the_approval() {
    let node = |id: &str, status: NodeStatus, output: Option<Value>| {
        let mut n: NodeView = serde_json::from_value(json!({"id": id, "status": "pending", "attempts": 1})).unwrap();
        n.status = status;
        n.output = output;
        n
    };
    let nodes = [
        node("fetch", NodeStatus::Succeeded, Some(json!({"amount": 30}))),
        node("skipped", NodeStatus::Skipped, None),
        node("failed", NodeStatus::Failed, Some(json!(1))),
        node("ask", NodeStatus::Succeeded, Some(json!({"decision": "approved"}))),
    ];
    assert_eq!(earlier_outputs(&nodes, None, "ask"), [("fetch".to_owned(), json!({"amount": 30}))]);
}

#[test]
fn only_nodes_before_the_approval_are_earlier() {
    let node = |id: &str| {
        serde_json::from_value::<NodeView>(json!({"id": id, "status": "succeeded", "attempts": 1, "output": id}))
            .unwrap()
    };
    let nodes = [node("a"), node("b"), node("side"), node("ask"), node("after")];
    let graph: Definition = serde_json::from_value(json!({
        "nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "noop"}, {"id": "side", "type": "noop"},
                  {"id": "ask", "type": "approval"}, {"id": "after", "type": "noop"}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "ask"}, {"from": "ask", "to": "after"}]
    }))
    .unwrap();
    let ids: Vec<String> = earlier_outputs(&nodes, Some(&graph), "ask").into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["a", "b"]);
}

#[test]
fn an_approval_node_links_to_its_approval() {
    let mut n: NodeView = serde_json::from_value(json!({"id": "ask", "status": "waiting", "attempts": 1})).unwrap();
    assert_eq!(node_approval(&n), None);
    n.approval = Some("a1".into());
    assert_eq!(node_approval(&n), Some(("/approvals/a1".to_owned(), true)));
    n.status = NodeStatus::Succeeded;
    assert_eq!(node_approval(&n), Some(("/approvals/a1".to_owned(), false)));
}
