//! Approvals (`approval` nodes, `/api/v1/approvals`): quorum, who may decide, the form, the
//! timeout, what publishing refuses, and one outcome when decisions race on two processes.

use crate::bad_input::send_while_reading_as;
use crate::common::{both_backends, node, problem, Backend, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use trellis_model::{InstanceStatus, NodeStatus};

/// Makes a user (`role`, optional `groups`) and returns a token for them.
async fn user(app: &TestApp, name: &str, role: &str, groups: &[&str]) -> String {
    let made = app.post("/api/v1/users").json(&json!({"username": name, "password": "password-123", "role": role}));
    let made: Value = made.send().await.unwrap().json().await.unwrap();
    if !groups.is_empty() {
        let id = made["id"].as_str().expect("a user id");
        let set = app.patch(&format!("/api/v1/users/{id}")).json(&json!({"groups": groups})).send().await.unwrap();
        assert_eq!(set.status(), StatusCode::OK, "groups set");
    }
    app.login(name, "password-123").await
}

/// An approval node (`config` merged over a title) followed by a node echoing its decision
/// (on `success`: either decision), and one node per decision (`when: approved|rejected`).
pub(crate) fn asking(config: Value) -> Value {
    let mut merged = json!({"title": "Refund {{ input.amount }} EUR to {{ input.who }}?"});
    merged.as_object_mut().unwrap().extend(config.as_object().unwrap().clone());
    json!({
        "nodes": [
            {"id": "ok", "type": "approval", "config": merged},
            {"id": "after", "type": "transform", "config": {"expression": "nodes.ok.output.decision"}},
            {"id": "if_yes", "type": "noop"},
            {"id": "if_no", "type": "noop"}
        ],
        "edges": [{"from": "ok", "to": "after"}, {"from": "ok", "to": "if_yes", "when": "approved"},
            {"from": "ok", "to": "if_no", "when": "rejected"}]
    })
}

/// Waits until `instance`'s approval is open and returns it (as the admin sees it).
pub(crate) async fn open_approval(app: &TestApp, instance: &str) -> Value {
    for _ in 0..500 {
        let page: Value =
            app.get(&format!("/api/v1/approvals?instance_id={instance}")).send().await.unwrap().json().await.unwrap();
        if let Some(first) = page["items"].as_array().and_then(|items| items.first()) {
            if first["status"] == "open" && node(&app.instance(instance).await, "ok").status == NodeStatus::Waiting {
                return first.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no open approval for {instance}");
}

pub(crate) async fn decide(app: &TestApp, token: &str, id: &str, body: Value) -> reqwest::Response {
    let url = app.url(&format!("/api/v1/approvals/{id}/decision"));
    app.client.post(url).bearer_auth(token).json(&body).send().await.unwrap()
}

async fn get_as(app: &TestApp, token: &str, path: &str) -> Value {
    let response = app.client.get(app.url(path)).bearer_auth(token).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    response.json().await.unwrap()
}

async fn quorum_of_two_closes_once_with_the_decisions_that_counted(app: TestApp) {
    let ann = user(&app, "ann", "viewer", &[]).await;
    let bob = user(&app, "bob", "viewer", &["finance"]).await;
    let cat = user(&app, "cat", "viewer", &["finance"]).await;
    let form =
        json!({"type": "object", "required": ["reason"], "properties": {"reason": {"type": "string", "minLength": 3}}});
    let wf = app
        .publish(asking(json!({"assignees": {"users": ["ann"], "groups": ["finance"]}, "required": 2, "form": form,
            "description": "for {{ input.who }}"})))
        .await;
    let id = app.start(&wf, json!({"input": {"amount": 120, "who": "Dana"}})).await;
    let approval = open_approval(&app, &id).await;
    let approval_id = approval["id"].as_str().unwrap().to_owned();
    assert_eq!(approval["title"], "Refund 120 EUR to Dana?");
    assert_eq!(approval["description"], "for Dana");
    assert_eq!(approval["started_by"], "admin");
    assert_eq!(approval["required"], 2);
    assert_eq!(app.instance_json(&id).await["started_by"], "admin");
    assert_eq!(app.instance_json(&id).await["nodes"][0]["approval"], approval_id.as_str());

    // What waits for each assignee; the admin (not an assignee: no role is named) has none.
    for token in [&ann, &bob, &cat] {
        assert_eq!(get_as(&app, token, "/api/v1/approvals/count").await["mine"], 1);
        let mine = get_as(&app, token, "/api/v1/approvals?mine=true").await;
        assert_eq!(mine["items"][0]["id"], approval_id.as_str());
        assert_eq!(mine["items"][0]["can_decide"], true);
    }
    assert_eq!(get_as(&app, &app.admin_token, "/api/v1/approvals/count").await["mine"], 0);

    // The form is held: each violation at its path, nothing counted.
    let broken = decide(&app, &ann, &approval_id, json!({"decision": "approve", "response": {"reason": 5}})).await;
    let body = problem(broken, 422).await;
    assert_eq!(body["errors"][0]["path"], "/reason", "{body}");
    let missing = problem(decide(&app, &ann, &approval_id, json!({"decision": "approve"})).await, 422).await;
    assert!(missing["detail"].as_str().unwrap().contains("reason"), "{missing}");

    let first = decide(
        &app,
        &ann,
        &approval_id,
        json!({"decision": "approve", "response": {"reason": "fine"},
        "comment": "checked the invoice"}),
    )
    .await;
    assert_eq!(first.status(), StatusCode::OK);
    let first: Value = first.json().await.unwrap();
    assert_eq!((first["status"].as_str(), first["decisions"].as_array().unwrap().len()), (Some("open"), 1));
    problem(decide(&app, &ann, &approval_id, json!({"decision": "reject"})).await, 409).await;
    assert_eq!(get_as(&app, &ann, "/api/v1/approvals/count").await["mine"], 0);
    assert_eq!(get_as(&app, &ann, "/api/v1/approvals?decided=true").await["items"][0]["id"], approval_id.as_str());

    // Bob and Cat at once: one of them is the second approval, the other finds it closed.
    let answer = json!({"decision": "approve", "response": {"reason": "ok by me"}});
    let (b, c) = tokio::join!(
        decide(&app, &bob, &approval_id, answer.clone()),
        decide(&app, &cat, &approval_id, answer.clone())
    );
    let mut codes = [b.status().as_u16(), c.status().as_u16()];
    codes.sort_unstable();
    assert_eq!(codes, [200, 409]);

    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    let output = node(&done, "ok").output.clone().unwrap();
    assert_eq!(output["decision"], "approved");
    let users: Vec<&str> =
        output["decisions"].as_array().unwrap().iter().map(|d| d["user"].as_str().unwrap()).collect();
    assert_eq!(users.len(), 2, "{output}");
    assert_eq!(users[0], "ann");
    assert_eq!(output["decisions"][0]["comment"], "checked the invoice");
    assert_eq!(output["decisions"][0]["response"], json!({"reason": "fine"}));
    assert_eq!(node(&done, "after").output, Some(json!("approved")));
    assert_eq!(
        (node(&done, "if_yes").status, node(&done, "if_no").status),
        (NodeStatus::Succeeded, NodeStatus::Skipped)
    );
    let closed: Value =
        app.get(&format!("/api/v1/approvals/{approval_id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(closed["status"], "approved");
    assert!(closed["closed_at"].is_string());
    problem(decide(&app, &cat, &approval_id, answer).await, 409).await;
}

async fn the_starter_and_strangers_are_refused_and_a_rejection_closes(app: TestApp) {
    let viewer = app.token_for("viewer").await;
    let operator = app.token_for("operator").await;
    // Saying no needs no form filled in.
    let form = json!({"type": "object", "required": ["reason"]});
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}, "form": form}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 5, "who": "Eve"}})).await;
    let approval_id = open_approval(&app, &id).await["id"].as_str().unwrap().to_owned();

    let starter =
        problem(decide(&app, &app.admin_token, &approval_id, json!({"decision": "approve"})).await, 403).await;
    assert!(starter["detail"].as_str().unwrap().contains("allow_starter"), "{starter}");
    // An API key with the role is not one of the role's people.
    let key = app.post("/api/v1/api-keys").json(&json!({"name": "robot", "role": "operator"})).send().await.unwrap();
    let key: Value = key.json().await.unwrap();
    let robot = decide(&app, key["key"].as_str().unwrap(), &approval_id, json!({"decision": "approve"})).await;
    let robot = problem(robot, 403).await;
    assert!(robot["detail"].as_str().unwrap().contains("assignees"), "{robot}");
    let stranger = problem(decide(&app, &viewer, &approval_id, json!({"decision": "approve"})).await, 403).await;
    assert!(stranger["detail"].as_str().unwrap().contains("assignees"), "{stranger}");
    let shown = get_as(&app, &app.admin_token, &format!("/api/v1/approvals/{approval_id}")).await;
    assert_eq!(shown["can_decide"], false);
    // A viewer may list only what is theirs.
    let all = app.client.get(app.url("/api/v1/approvals")).bearer_auth(&viewer).send().await.unwrap();
    problem(all, 403).await;
    let long = "x".repeat(20_000);
    problem(decide(&app, &operator, &approval_id, json!({"decision": "approve", "comment": long})).await, 413).await;
    // A 1 MiB comment is refused before its body is read through: read the answer as it is
    // written (an ordinary client may see only the connection closing under its upload).
    let huge = json!({"decision": "approve", "comment": "x".repeat(1 << 20)}).to_string().into_bytes();
    let path = format!("/api/v1/approvals/{approval_id}/decision");
    let (status, answer) = send_while_reading_as(&app, &operator, "POST", &path, huge).await;
    assert_eq!(status, 413, "{answer}");

    let rejected = decide(&app, &operator, &approval_id, json!({"decision": "reject", "comment": "no"})).await;
    assert_eq!(rejected.status(), StatusCode::OK);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    assert_eq!(node(&done, "ok").output.as_ref().unwrap()["decision"], "rejected");
    assert_eq!(node(&done, "after").output, Some(json!("rejected")));
    // Edges follow the decision: `when: approved` is not taken, `when: rejected` is.
    assert_eq!(node(&done, "if_yes").status, NodeStatus::Skipped);
    assert_eq!(node(&done, "if_no").status, NodeStatus::Succeeded);

    // With `allow_starter`, the starter decides.
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}, "allow_starter": true}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 5, "who": "Eve"}})).await;
    let approval_id = open_approval(&app, &id).await["id"].as_str().unwrap().to_owned();
    let own = decide(&app, &app.admin_token, &approval_id, json!({"decision": "approve"})).await;
    assert_eq!(own.status(), StatusCode::OK);
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
}

async fn a_timeout_ends_the_node_timed_out_and_refuses_later_decisions(app: TestApp) {
    let operator = app.token_for("operator").await;
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}, "timeout_ms": 800}))).await;
    let began = Instant::now();
    let id = app.start(&wf, json!({"input": {"amount": 1, "who": "Finn"}})).await;
    let approval = open_approval(&app, &id).await;
    assert!(approval["due_at"].is_string(), "{approval}");
    let done = app.wait_finished(&id).await;
    let took = began.elapsed();
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    assert_eq!(node(&done, "ok").status, NodeStatus::TimedOut);
    assert!(took >= Duration::from_millis(800), "{took:?}");
    let approval_id = approval["id"].as_str().unwrap();
    let late = problem(decide(&app, &operator, approval_id, json!({"decision": "approve"})).await, 409).await;
    assert!(late["detail"].as_str().unwrap().contains("timed out"), "{late}");
    let shown = get_as(&app, &operator, &format!("/api/v1/approvals/{approval_id}")).await;
    assert_eq!(shown["status"], "timed_out");
}

async fn publishing_refuses_nobody_and_a_form_that_is_no_schema(app: TestApp) {
    let unknown = asking(json!({"assignees": {"users": ["nobody-here"]}}));
    let created = app.create_workflow(json!({"name": "asks nobody", "definition": unknown})).await;
    let refused = app.post(&format!("/api/v1/workflows/{}/versions", created.summary.id)).send().await.unwrap();
    let body = problem(refused, 422).await;
    let paths: Vec<&str> = body["errors"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect();
    assert!(paths.contains(&"nodes[0].config.assignees.users[0]"), "{body}");
    assert!(body.to_string().contains("nobody-here"), "{body}");

    let validate = format!("/api/v1/workflows/{}/validate", created.summary.id);
    let bad_form = asking(json!({"assignees": {"roles": ["operator"]}, "form": {"type": "no-such-type"}}));
    let checked = app.post(&validate).json(&bad_form);
    let report: Value = checked.send().await.unwrap().json().await.unwrap();
    assert_eq!(report["valid"], false, "{report}");
    assert!(report.to_string().contains("nodes[0].config.form"), "{report}");
    let no_one = asking(json!({"assignees": {}}));
    let report: Value = app.post(&validate).json(&no_one).send().await.unwrap().json().await.unwrap();
    assert!(report.to_string().contains("names nobody"), "{report}");
}

/// A run started by a parent keeps the parent's starter: the starter rule holds through a
/// parent workflow that calls the gated one.
async fn a_childs_approval_knows_who_started_the_parent(app: TestApp) {
    let gated = app.publish(asking(json!({"assignees": {"roles": ["operator"]}}))).await;
    let parent =
        app.publish(json!({"nodes": [{"id": "call", "type": "subworkflow", "config": {"workflow": gated}}]})).await;
    let id = app.start(&parent, json!({"input": {"amount": 2, "who": "Lu"}})).await;
    let child = app.wait_for(&id, |i| node(i, "call").child.is_some()).await;
    let child = node(&child, "call").child.clone().unwrap();
    let approval = open_approval(&app, &child).await;
    assert_eq!(approval["started_by"], "admin");
    let own = decide(&app, &app.admin_token, approval["id"].as_str().unwrap(), json!({"decision": "approve"})).await;
    problem(own, 403).await;
}

async fn a_purged_instances_approval_is_gone(app: TestApp) {
    let wf = app.publish(asking(json!({"assignees": {"roles": ["operator"]}}))).await;
    let id = app.start(&wf, json!({"input": {"amount": 1, "who": "Gil"}})).await;
    let approval_id = open_approval(&app, &id).await["id"].as_str().unwrap().to_owned();
    assert_eq!(app.post(&format!("/api/v1/instances/{id}/cancel")).send().await.unwrap().status(), StatusCode::OK);
    app.wait_finished(&id).await;
    let canceled = get_as(&app, &app.admin_token, &format!("/api/v1/approvals/{approval_id}")).await;
    assert_eq!(canceled["status"], "canceled");
    let deleted = app.client.delete(app.url(&format!("/api/v1/instances/{id}"))).bearer_auth(&app.admin_token);
    assert!(deleted.send().await.unwrap().status().is_success());
    let gone = app.get(&format!("/api/v1/approvals/{approval_id}")).send().await.unwrap();
    problem(gone, 404).await;
    let operator = app.token_for("operator").await;
    problem(decide(&app, &operator, &approval_id, json!({"decision": "approve"})).await, 404).await;
}

both_backends!(
    quorum_of_two_closes_once_with_the_decisions_that_counted,
    the_starter_and_strangers_are_refused_and_a_rejection_closes,
    a_timeout_ends_the_node_timed_out_and_refuses_later_decisions,
    publishing_refuses_nobody_and_a_form_that_is_no_schema,
    a_purged_instances_approval_is_gone,
    a_childs_approval_knows_who_started_the_parent,
);

/// Three decisions sent at once to two processes on one Postgres, quorum 2 of 3: exactly two
/// count, the approval closes once, and the node's output lists exactly those two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_racing_on_two_processes_close_it_once() {
    let first = TestApp::spawn(Backend::Postgres).await;
    let second = first.spawn_peer().await;
    let tokens = [
        user(&first, "ann", "viewer", &[]).await,
        user(&first, "bob", "viewer", &[]).await,
        user(&first, "cat", "viewer", &[]).await,
    ];
    let wf = first.publish(asking(json!({"assignees": {"users": ["ann", "bob", "cat"]}, "required": 2}))).await;
    for round in 0..3 {
        let id = first.start(&wf, json!({"input": {"amount": round, "who": "Hal"}})).await;
        let approval_id = open_approval(&first, &id).await["id"].as_str().unwrap().to_owned();
        let body = json!({"decision": "approve"});
        let (a, b, c) = tokio::join!(
            decide(&first, &tokens[0], &approval_id, body.clone()),
            decide(&second, &tokens[1], &approval_id, body.clone()),
            decide(&second, &tokens[2], &approval_id, body.clone()),
        );
        let counted: Vec<&str> = [(&a, "ann"), (&b, "bob"), (&c, "cat")]
            .iter()
            .filter(|(r, _)| r.status() == StatusCode::OK)
            .map(|(_, who)| *who)
            .collect();
        assert_eq!(counted.len(), 2, "round {round}: {:?}", [a.status(), b.status(), c.status()]);
        let done = first.wait_finished(&id).await;
        let output = node(&done, "ok").output.clone().unwrap();
        let mut users: Vec<&str> =
            output["decisions"].as_array().unwrap().iter().map(|d| d["user"].as_str().unwrap()).collect();
        users.sort_unstable();
        assert_eq!(users, counted, "round {round}: {output}");
    }
}
