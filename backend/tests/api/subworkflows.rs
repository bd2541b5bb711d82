//! Sub-workflows: a `subworkflow` node runs a child instance and outputs its output; failure,
//! retry and cancel cross the link; publishing refuses missing callees and cycles; the depth
//! limit stops a chain at run time.

use crate::common::{both_backends, node, problem, TestApp};
use crate::traces::history;
use serde_json::{json, Value};
use trellis_model::api::{InstanceDetail, InstancePage};
use trellis_model::{InstanceStatus, NodeStatus};

/// Creates a workflow named `name` with `definition` as its draft; returns its id.
pub(crate) async fn create(app: &TestApp, name: &str, definition: Value) -> String {
    app.create_workflow(json!({"name": name, "definition": definition})).await.summary.id
}

pub(crate) async fn publish_draft(app: &TestApp, id: &str) -> reqwest::Response {
    app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap()
}

/// Creates and publishes a workflow named `name`; returns its id.
pub(crate) async fn published(app: &TestApp, name: &str, definition: Value) -> String {
    let id = create(app, name, definition).await;
    assert_eq!(publish_draft(app, &id).await.status(), 201, "publish {name}");
    id
}

/// Replaces a workflow's draft (any revision).
pub(crate) async fn save_draft(app: &TestApp, id: &str, definition: Value) {
    let saved = app.put(&format!("/api/v1/workflows/{id}/draft")).header("If-Match", "*").json(&definition).send();
    assert_eq!(saved.await.unwrap().status(), 200);
}

fn calls(workflow: &str, extra: Value) -> Value {
    let mut config = json!({"workflow": workflow});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"nodes": [{"id": "sub", "type": "subworkflow", "config": config}]})
}

fn waits_for_a_signal() -> Value {
    json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})
}

/// Waits until the parent's `sub` node has a running child; returns the child's id.
async fn running_child(app: &TestApp, parent: &str) -> String {
    let waiting = app
        .wait_for(parent, |i| {
            let sub = node(i, "sub");
            sub.status == NodeStatus::Waiting && sub.child_status == Some(InstanceStatus::Running)
        })
        .await;
    node(&waiting, "sub").child.clone().unwrap()
}

async fn children_of(app: &TestApp, workflow: &str) -> Vec<String> {
    let page: InstancePage =
        app.get(&format!("/api/v1/instances?workflow={workflow}")).send().await.unwrap().json().await.unwrap();
    page.items.into_iter().map(|i| i.id).collect()
}

async fn signal(app: &TestApp, instance: &str, node: &str) {
    let sent =
        app.post(&format!("/api/v1/instances/{instance}/signal")).json(&json!({"node": node, "payload": {"ok": 1}}));
    assert_eq!(sent.send().await.unwrap().status(), 200);
}

fn error_of(instance: &InstanceDetail, id: &str) -> String {
    node(instance, id).error.clone().unwrap_or_default()
}

async fn a_parent_waits_for_its_child_and_outputs_the_childs_output(app: TestApp) {
    let child = published(
        &app,
        "doubler",
        json!({"nodes": [
            {"id": "double", "type": "transform", "config": {"expression": "{'n': input.n * 2}"}}
        ]}),
    )
    .await;
    let parent = published(&app, "caller", json!({
        "nodes": [
            {"id": "sub", "type": "subworkflow", "config": {"workflow": child, "version": "latest", "input": "{'n': input.x + 1}"}},
            {"id": "after", "type": "transform", "config": {"expression": "nodes.sub.output.double.n"}}
        ],
        "edges": [{"from": "sub", "to": "after"}]
    })).await;
    let id = app.start(&parent, json!({"input": {"x": 20}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "sub").output, Some(json!({"double": {"n": 42}})));
    assert_eq!(done.output, Some(json!({"after": 42})));
    assert_eq!(done.parent, None);

    // The link, both ways, on the wire.
    let wire = app.instance_json(&id).await;
    assert_eq!(wire["parent"], Value::Null);
    let child_id = wire["nodes"][0]["child"].as_str().unwrap().to_owned();
    assert_eq!(wire["nodes"][0]["child_status"], "succeeded");
    assert!(wire["nodes"][1].get("child").is_none(), "only subworkflow nodes have a child");
    let child_wire = app.instance_json(&child_id).await;
    assert_eq!(child_wire["workflow_id"], child.as_str());
    assert_eq!(child_wire["input"], json!({"n": 21}));
    assert_eq!(child_wire["parent"]["instance"], id.as_str());
    assert_eq!(child_wire["parent"]["node"], "sub");
    assert_eq!(child_wire["parent"]["workflow_name"], "caller");

    // The child's instance span hangs under the parent's attempt span, in one trace.
    let span_of = |entries: &[Value], kind: &str| -> Value {
        entries
            .iter()
            .find(|e| e["event"] == "span_start" && e["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} span in {entries:?}"))
            .clone()
    };
    let parent_history = history(&app, &id).await;
    let attempt = span_of(&parent_history, "node");
    let root = span_of(&history(&app, &child_id).await, "instance");
    assert_eq!(root["trace_id"], span_of(&parent_history, "instance")["trace_id"]);
    assert_eq!(root["parent_span_id"], attempt["span_id"]);

    // The document names the new fields and the node's config.
    let doc: Value = app.get("/api/v1/openapi.json").send().await.unwrap().json().await.unwrap();
    let schemas = &doc["components"]["schemas"];
    assert!(schemas["NodeView"]["properties"]["child"].is_object(), "{}", schemas["NodeView"]);
    assert!(schemas["ParentRef"]["properties"]["instance"].is_object(), "{}", schemas["ParentRef"]);
    assert_eq!(schemas["SubworkflowConfig"]["required"], json!(["workflow"]));
}

async fn a_child_failure_fails_the_parent_node_with_the_childs_error(app: TestApp) {
    let child = published(
        &app,
        "breaks",
        json!({"nodes": [
            {"id": "boom", "type": "fail", "config": {"message": "disk on fire"}}
        ]}),
    )
    .await;
    let parent = published(&app, "caller", calls(&child, json!({}))).await;
    let done = app.wait_finished(&app.start(&parent, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let child_id = node(&done, "sub").child.clone().unwrap();
    assert_eq!(node(&done, "sub").child_status, Some(InstanceStatus::Failed));
    let error = error_of(&done, "sub");
    assert!(error.starts_with(&format!("child instance {child_id} failed:")), "{error}");
    assert!(error.contains("disk on fire"), "{error}");
    assert!(done.summary.error.as_deref().unwrap().contains("disk on fire"));
}

async fn a_retry_of_the_node_starts_a_new_child(app: TestApp) {
    let child = published(&app, "gate", waits_for_a_signal()).await;
    let mut definition = calls(&child, json!({}));
    definition["nodes"][0]["retry"] = json!({"max_attempts": 2, "backoff_ms": 10, "max_backoff_ms": 10});
    let parent = published(&app, "caller", definition).await;
    let id = app.start(&parent, json!({"input": {"order": 7}})).await;
    let first = running_child(&app, &id).await;
    // A redone attempt starts its child with the same idempotency key: it finds the first.
    let again = app
        .post(&format!("/api/v1/workflows/{child}/instances"))
        .header("Idempotency-Key", format!("subworkflow:{id}:sub:1"))
        .json(&json!({"input": {"order": 7}, "version": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.json::<Value>().await.unwrap()["id"], first.as_str());

    assert_eq!(app.post(&format!("/api/v1/instances/{first}/cancel")).send().await.unwrap().status(), 200);
    let second = app
        .wait_for(&id, |i| {
            node(i, "sub").child.as_deref().is_some_and(|c| c != first)
                && node(i, "sub").child_status == Some(InstanceStatus::Running)
        })
        .await;
    let second = node(&second, "sub").child.clone().unwrap();
    signal(&app, &second, "gate").await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "sub").attempts, 2);
    assert_eq!(node(&done, "sub").output, Some(json!({"gate": {"ok": 1}})));
    let mut children = children_of(&app, &child).await;
    children.sort();
    assert_eq!(children, vec![first.clone(), second.clone()], "one child per attempt");
    assert_eq!(app.instance(&first).await.summary.status, InstanceStatus::Canceled);
}

async fn canceling_a_parent_cancels_its_live_children_and_theirs(app: TestApp) {
    let leaf = published(&app, "leaf", waits_for_a_signal()).await;
    let middle = published(&app, "middle", calls(&leaf, json!({}))).await;
    let top = published(&app, "top", calls(&middle, json!({}))).await;
    let id = app.start(&top, json!({})).await;
    let mid = running_child(&app, &id).await;
    let bottom = running_child(&app, &mid).await;
    assert_eq!(app.post(&format!("/api/v1/instances/{id}/cancel")).send().await.unwrap().status(), 200);
    assert_eq!(app.wait_finished(&mid).await.summary.status, InstanceStatus::Canceled);
    assert_eq!(app.wait_finished(&bottom).await.summary.status, InstanceStatus::Canceled);
    let top_done = app.instance(&id).await;
    assert_eq!(top_done.summary.status, InstanceStatus::Canceled);
    assert_eq!(node(&top_done, "sub").status, NodeStatus::Canceled, "the wake of a canceled parent changes nothing");
}

async fn publishing_refuses_a_self_call_and_a_cycle_naming_it(app: TestApp) {
    let a = create(&app, "Alpha", json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    save_draft(&app, &a, calls(&a, json!({}))).await;
    let refused = problem(publish_draft(&app, &a).await, 422).await;
    assert_eq!(refused["errors"][0]["code"], "workflow_cycle", "{refused}");
    assert_eq!(refused["errors"][0]["message"], "workflow cycle: Alpha → Alpha");
    assert_eq!(refused["errors"][0]["path"], "nodes[0].config.workflow");

    let b = published(&app, "Beta", json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    save_draft(&app, &a, calls(&b, json!({}))).await;
    assert_eq!(publish_draft(&app, &a).await.status(), 201, "Alpha → Beta is no cycle");
    save_draft(&app, &b, calls(&a, json!({"version": 1}))).await;
    let refused = problem(publish_draft(&app, &b).await, 422).await;
    assert_eq!(refused["errors"][0]["message"], "workflow cycle: Beta → Alpha → Beta", "{refused}");
    // The draft's validation says the same.
    let report: Value = app
        .post(&format!("/api/v1/workflows/{b}/validate"))
        .json(&calls(&a, json!({})))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"][0]["code"], "workflow_cycle");
}

async fn publishing_refuses_a_missing_archived_or_unpublished_callee(app: TestApp) {
    let caller = create(&app, "caller", json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    let refusal = |code: &'static str, path: &'static str| {
        move |body: Value| {
            assert_eq!(
                (body["errors"][0]["code"].as_str(), body["errors"][0]["path"].as_str()),
                (Some(code), Some(path)),
                "{body}"
            );
        }
    };
    save_draft(&app, &caller, calls("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", json!({}))).await;
    refusal("unknown_workflow", "nodes[0].config.workflow")(problem(publish_draft(&app, &caller).await, 422).await);

    let draft_only = create(&app, "unpublished", json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    save_draft(&app, &caller, calls(&draft_only, json!({}))).await;
    refusal("unpublished_workflow", "nodes[0].config.workflow")(problem(publish_draft(&app, &caller).await, 422).await);

    let callee = published(&app, "callee", json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    save_draft(&app, &caller, calls(&callee, json!({"version": 5}))).await;
    refusal("unknown_version", "nodes[0].config.version")(problem(publish_draft(&app, &caller).await, 422).await);

    assert_eq!(app.post(&format!("/api/v1/workflows/{callee}/archive")).send().await.unwrap().status(), 200);
    save_draft(&app, &caller, calls(&callee, json!({}))).await;
    refusal("archived_workflow", "nodes[0].config.workflow")(problem(publish_draft(&app, &caller).await, 422).await);
    let report: Value = app
        .post(&format!("/api/v1/workflows/{caller}/validate"))
        .json(&calls(&callee, json!({})))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (report["valid"].as_bool(), report["errors"][0]["code"].as_str()),
        (Some(false), Some("archived_workflow"))
    );
}

async fn a_callee_archived_after_publishing_fails_the_node_for_good(app: TestApp) {
    let callee = published(&app, "callee", json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    let mut definition = calls(&callee, json!({}));
    definition["nodes"][0]["retry"] = json!({"max_attempts": 3, "backoff_ms": 10, "max_backoff_ms": 10});
    let caller = published(&app, "caller", definition).await;
    assert_eq!(app.post(&format!("/api/v1/workflows/{callee}/archive")).send().await.unwrap().status(), 200);
    let done = app.wait_finished(&app.start(&caller, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    assert_eq!(node(&done, "sub").attempts, 1, "not retried: retrying cannot help");
    let error = error_of(&done, "sub");
    assert!(error.contains("`callee`") && error.contains("is archived"), "{error}");
    assert_eq!(node(&done, "sub").child, None);
}

async fn a_chain_deeper_than_the_limit_fails_naming_its_root(app: TestApp) {
    // 18 workflows, each calling the next: instances at depth 0..=16 run, the 17th
    // level is refused.
    let mut next = published(&app, "w17", json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    for level in (0..17).rev() {
        next = published(&app, &format!("w{level}"), calls(&next, json!({}))).await;
    }
    let root = app.start(&next, json!({})).await;
    let done = app.wait_finished(&root).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let error = done.summary.error.unwrap();
    assert!(error.contains("sub-workflow depth limit (16) exceeded"), "{error}");
    assert!(error.contains(&root), "names the chain's root: {error}");
}
both_backends!(
    a_parent_waits_for_its_child_and_outputs_the_childs_output,
    a_child_failure_fails_the_parent_node_with_the_childs_error,
    a_retry_of_the_node_starts_a_new_child,
    canceling_a_parent_cancels_its_live_children_and_theirs,
    publishing_refuses_a_self_call_and_a_cycle_naming_it,
    publishing_refuses_a_missing_archived_or_unpublished_callee,
    a_callee_archived_after_publishing_fails_the_node_for_good,
    a_chain_deeper_than_the_limit_fails_naming_its_root
);
