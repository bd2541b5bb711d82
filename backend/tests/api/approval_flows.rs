//! Approvals beyond the API's rules: the `approval_requested` alert with its link, a close
//! whose node transition a crash lost (finished by the sweep), and the command line.

use crate::alerts::{app as alerting_app, checked_body, create, posts, receiver};
use crate::approvals::{asking, open_approval};
use crate::cli_client::Client;
use crate::common::{both_backends, node, on_both, TestApp};
use serde_json::json;
use std::time::Duration;
use trellis::store::DecisionRow;
use trellis_model::InstanceStatus;

async fn an_approval_requested_alert_links_to_the_approval(backend: crate::common::Backend) {
    let app = alerting_app(backend).await;
    let (url, inbox) = receiver(vec![]).await;
    let rule = create(&app, json!({"name": "approvers", "when": "approval_requested", "url": url})).await;
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 7, "who": "Ida <!channel>"}})).await;
    let approval = open_approval(&app, &id).await;
    let got = posts(&inbox, 1).await;
    assert_eq!(got.len(), 1, "one alert per approval");
    let body = checked_body(&rule.secret, &got[0]);
    let approval_id = approval["id"].as_str().unwrap();
    assert_eq!(body["event"], "approval_requested");
    assert_eq!(body["approval"]["url"], format!("https://trellis.example.com/approvals/{approval_id}"));
    let text = body["text"].as_str().unwrap();
    assert!(text.contains("Refund 7 EUR to Ida &lt;!channel&gt;?"), "{text}");
    assert!(
        text.contains(&format!("<https://trellis.example.com/approvals/{approval_id}|Open the approval>")),
        "{text}"
    );
}

on_both!(an_approval_requested_alert_links_to_the_approval);

/// A decision that closed the approval, written without its node's transition (as a crash
/// between the two leaves it): the sweep moves the node on, once.
async fn a_close_without_its_transition_is_finished_by_the_sweep(app: TestApp) {
    let wf = app.publish(asking(json!({"assignees": {"users": ["admin"]}, "allow_starter": true}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 3, "who": "Jo"}})).await;
    let approval = open_approval(&app, &id).await;
    let decision = DecisionRow {
        approval_id: approval["id"].as_str().unwrap().parse().unwrap(),
        username: "admin".into(),
        decision: "approved".into(),
        response: None,
        comment: Some("written by hand".into()),
        decided_at: chrono::Utc::now(),
    };
    let decided = app.server_store().decide(&decision).await.unwrap();
    assert!(matches!(decided, trellis::store::Decided::Closed(_)), "{decided:?}");
    let done = tokio::time::timeout(Duration::from_secs(20), app.wait_finished(&id)).await.expect("swept");
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    let output = node(&done, "ok").output.clone().unwrap();
    assert_eq!(output["decision"], "approved");
    assert_eq!(output["decisions"][0]["comment"], "written by hand");
}

async fn the_command_line_lists_and_decides(app: TestApp) {
    let cli = Client::new(&app).await;
    // An API key decides only where it is named (never by its role).
    let wf = app.publish(asking(json!({"assignees": {"users": ["key:cli"]}}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 9, "who": "Kim"}})).await;
    let approval = open_approval(&app, &id).await;
    let approval_id = approval["id"].as_str().unwrap();
    let shown = cli.run(&["approval", "show", approval_id]).await;
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    let page = String::from_utf8_lossy(&shown.stdout);
    for part in ["Refund 9 EUR to Kim?", "open", "user key:cli", "0 of 1"] {
        assert!(page.contains(part), "`{part}` missing from:\n{page}");
    }
    let listed = cli.run(&["approval", "list"]).await;
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    assert!(table.contains(approval_id) && table.contains("Refund 9 EUR to Kim?"), "{table}");
    let approved = cli.run(&["approval", "approve", approval_id, "-m", "fine", "-o", "json"]).await;
    assert!(approved.status.success(), "{}", String::from_utf8_lossy(&approved.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&approved.stdout).unwrap();
    assert_eq!(shown["status"], "approved");
    assert_eq!(shown["decisions"][0]["user"], "key:cli");
    let again = cli.run(&["approval", "reject", approval_id]).await;
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already approved"), "{again:?}");
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
}

both_backends!(a_close_without_its_transition_is_finished_by_the_sweep, the_command_line_lists_and_decides);
