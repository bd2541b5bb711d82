//! Approvals' rules beyond who decides: a decision is audited with which way it went, an
//! answer given with a rejection is held to the form, publishing refuses a form that is no
//! schema and assignees no one is, and a decision racing the timeout leaves one outcome.

use crate::approvals::{asking, decide, open_approval};
use crate::common::{both_backends, node, problem, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::{InstanceStatus, NodeStatus};

/// The audit rows of decisions on `approval`, once there are `count` (a background writer
/// records them just after each answer).
async fn decisions_audited(app: &TestApp, approval: &str, count: usize) -> Vec<Value> {
    for _ in 0..500 {
        let page: Value = app.get("/api/v1/audit?limit=500").send().await.unwrap().json().await.unwrap();
        let rows: Vec<Value> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["action"] == "POST /api/v1/approvals/{id}/decision" && row["target"] == approval)
            .cloned()
            .collect();
        if rows.len() >= count {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the audit log never showed {count} decisions on {approval}");
}

async fn every_decision_is_audited_with_its_verdict(app: TestApp) {
    let operator = app.token_for("operator").await;
    let viewer = app.token_for("viewer").await;
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}, "required": 1}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 4, "who": "Lu"}})).await;
    let approval = open_approval(&app, &id).await["id"].as_str().unwrap().to_owned();
    problem(decide(&app, &viewer, &approval, json!({"decision": "approve"})).await, 403).await;
    let said = decide(&app, &operator, &approval, json!({"decision": "approve", "comment": "secret-ish words"})).await;
    assert_eq!(said.status(), StatusCode::OK);

    let rows = decisions_audited(&app, &approval, 2).await;
    let approved = rows.iter().find(|row| row["status"] == 200).expect("the decision's row");
    assert_eq!(approved["actor"]["name"], "operator-user", "{approved}");
    assert_eq!(approved["detail"], "approve: closed the approval approved", "{approved}");
    let refused = rows.iter().find(|row| row["status"] == 403).expect("the refusal's row");
    assert_eq!(refused["actor"]["name"], "viewer-user", "{refused}");
    assert!(refused["detail"].as_str().unwrap().contains("assignees"), "{refused}");
    // The comment is the decision's, not the trail's: no body reaches the log.
    assert!(!rows.iter().any(|row| row.to_string().contains("secret-ish")), "{rows:?}");
}

async fn an_answer_given_with_a_rejection_is_held_to_the_form(app: TestApp) {
    let operator = app.token_for("operator").await;
    let form = json!({"type": "object", "properties": {"reason": {"type": "string", "minLength": 3}}});
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}, "form": form}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 6, "who": "Mo"}})).await;
    let approval = open_approval(&app, &id).await["id"].as_str().unwrap().to_owned();
    let broken = json!({"decision": "reject", "response": {"reason": "no"}});
    let body = problem(decide(&app, &operator, &approval, broken).await, 422).await;
    assert_eq!(body["errors"][0]["path"], "/reason", "{body}");
    let fine = json!({"decision": "reject", "response": {"reason": "too much"}});
    assert_eq!(decide(&app, &operator, &approval, fine).await.status(), StatusCode::OK);
    let done = app.wait_finished(&id).await;
    let output = node(&done, "ok").output.clone().unwrap();
    assert_eq!(output["decision"], "rejected");
    assert_eq!(output["decisions"][0]["response"], json!({"reason": "too much"}));
}

async fn publishing_refuses_a_form_that_is_no_schema_and_a_group_no_one_is_in(app: TestApp) {
    let publish = |definition: Value| {
        let app = &app;
        async move {
            let created = app.create_workflow(json!({"name": "asks badly", "definition": definition})).await;
            let answer = app.post(&format!("/api/v1/workflows/{}/versions", created.summary.id)).send().await;
            problem(answer.unwrap(), 422).await
        }
    };
    let bad_form = publish(asking(json!({"assignees": {"roles": ["operator"]}, "form": {"type": "no-such-type"}})));
    let body = bad_form.await;
    assert!(body.to_string().contains("nodes[0].config.form"), "{body}");
    let empty_group = publish(asking(json!({"assignees": {"groups": ["no-one-in-this"]}}))).await;
    assert!(empty_group.to_string().contains("no-one-in-this"), "{empty_group}");
}

/// Decisions sent as the timeout falls due: each run ends one way, and what the approval says
/// is what its node did.
async fn a_decision_racing_the_timeout_leaves_one_outcome(app: TestApp) {
    let operator = app.token_for("operator").await;
    // Long enough that the approval is seen open before it falls due, even on a loaded machine.
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}, "timeout_ms": 1500}))).await;
    for lead in [0_u64, 20, 40, 60, 80] {
        let id = app.start(&wf, json!({"input": {"amount": lead, "who": "Ny"}})).await;
        let approval = open_approval(&app, &id).await;
        let approval_id = approval["id"].as_str().unwrap();
        let due: chrono::DateTime<chrono::Utc> = approval["due_at"].as_str().unwrap().parse().unwrap();
        let until = (due - chrono::Utc::now()).to_std().unwrap_or_default();
        tokio::time::sleep(until.saturating_sub(Duration::from_millis(lead))).await;
        let answer = decide(&app, &operator, approval_id, json!({"decision": "approve"})).await.status();
        let done = app.wait_finished(&id).await;
        let status = node(&done, "ok").status;
        let shown: Value =
            app.get(&format!("/api/v1/approvals/{approval_id}")).send().await.unwrap().json().await.unwrap();
        match answer {
            StatusCode::OK => {
                assert_eq!(status, NodeStatus::Succeeded, "lead {lead} ms");
                assert_eq!(done.summary.status, InstanceStatus::Succeeded);
                assert_eq!(shown["status"], "approved", "{shown}");
            }
            StatusCode::CONFLICT => {
                assert_eq!(status, NodeStatus::TimedOut, "lead {lead} ms");
                assert_eq!(shown["status"], "timed_out", "{shown}");
                assert_eq!(shown["decisions"], json!([]), "{shown}");
            }
            other => panic!("a decision answered {other} (lead {lead} ms)"),
        }
    }
}

both_backends!(
    every_decision_is_audited_with_its_verdict,
    an_answer_given_with_a_rejection_is_held_to_the_form,
    publishing_refuses_a_form_that_is_no_schema_and_a_group_no_one_is_in,
    a_decision_racing_the_timeout_leaves_one_outcome
);
