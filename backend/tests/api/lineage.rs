//! Workflows starting one another — by a `subworkflow` node, a map over a workflow or over a
//! `subworkflow` node, and a failure handler — may not close a cycle: publishing refuses every
//! combination, naming the cycle in order and which link is a handler. A cycle made behind
//! those checks still ends: at run time a chain of instances started by one another carries
//! both counts through both links, so the start that would pass a bound is refused, and said.

use crate::common::{both_backends, node, problem, TestApp};
use crate::failure_handlers::pending_items;
use crate::subworkflows::{create, publish_draft, published, save_draft};
use serde_json::{json, Value};
use trellis_model::api::InstancePage;
use trellis_model::definition::MAX_FAILURE_HANDLER_DEPTH;
use trellis_model::InstanceStatus;

fn noop() -> Value {
    json!({"nodes": [{"id": "n", "type": "noop"}]})
}

/// One node that always fails, with `handler` as the workflow's failure handler.
fn failing_handled_by(handler: &str) -> Value {
    json!({
        "nodes": [{"id": "boom", "type": "fail", "config": {"message": "card declined"}}],
        "settings": {"on_failure": {"workflow": handler, "version": "latest"}}
    })
}

/// Each way a node calls `workflow`: a `subworkflow` node, a map over it, a map over a
/// `subworkflow` node calling it.
fn callers(workflow: &str) -> [(&'static str, Value); 3] {
    let sub = json!({"type": "subworkflow", "config": {"workflow": workflow}});
    [
        ("subworkflow", json!({"nodes": [{"id": "sub", "type": "subworkflow", "config": sub["config"]}]})),
        (
            "map over a workflow",
            json!({"nodes": [{"id": "sub", "type": "map", "config": {"items": "[1]", "workflow": {"workflow": workflow}}}]}),
        ),
        (
            "map over a subworkflow node",
            json!({"nodes": [{"id": "sub", "type": "map", "config": {"items": "[1]", "node": sub}}]}),
        ),
    ]
}

/// Checks a refusal's first issue: its code, path and message.
fn refused(body: &Value, code: &str, path: &str, message: &str) {
    let issue = &body["errors"][0];
    assert_eq!((issue["code"].as_str(), issue["path"].as_str()), (Some(code), Some(path)), "{body}");
    assert_eq!(issue["message"].as_str(), Some(message), "{body}");
}

async fn a_handler_calling_the_workflow_it_handles_is_refused_either_way_round(app: TestApp) {
    for (how, _) in callers("") {
        // The handler's call closes it: Alpha's handler is Handler, then Handler calls Alpha.
        let handler = published(&app, "Handler", noop()).await;
        let alpha = published(&app, "Alpha", failing_handled_by(&handler)).await;
        let calls = callers(&alpha).into_iter().find(|(h, _)| *h == how).unwrap().1;
        save_draft(&app, &handler, calls.clone()).await;
        let body = problem(publish_draft(&app, &handler).await, 422).await;
        let mixed = "cycle of workflows calling one another and failure handlers";
        refused(
            &body,
            "workflow_cycle",
            "nodes[0].config.workflow",
            &format!("{mixed}: Handler → Alpha → Handler (Alpha's failure handler)"),
        );

        // The handler setting closes it: Handler calls Beta, then Beta names Handler its handler.
        let beta = published(&app, "Beta", noop()).await;
        let calls_beta = callers(&beta).into_iter().find(|(h, _)| *h == how).unwrap().1;
        let handler = published(&app, "Handler", calls_beta).await;
        save_draft(&app, &beta, failing_handled_by(&handler)).await;
        let body = problem(publish_draft(&app, &beta).await, 422).await;
        refused(
            &body,
            "failure_handler_cycle",
            "settings.on_failure.workflow",
            &format!("{mixed}: Beta → Handler (Beta's failure handler) → Beta"),
        );
        // The draft's validation says the same.
        let report: Value = app
            .post(&format!("/api/v1/workflows/{beta}/validate"))
            .json(&failing_handled_by(&handler))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(report["errors"][0]["code"], "failure_handler_cycle", "{how}: {report}");
    }
}

async fn a_longer_cycle_through_a_handler_is_named_in_order(app: TestApp) {
    // Alpha's handler is Handler; Handler calls Beta; Beta would call Alpha.
    let beta = create(&app, "Beta", noop()).await;
    assert_eq!(publish_draft(&app, &beta).await.status(), 201);
    let handler = published(&app, "Handler", callers(&beta)[1].1.clone()).await;
    let alpha = published(&app, "Alpha", failing_handled_by(&handler)).await;
    save_draft(&app, &beta, callers(&alpha)[2].1.clone()).await;
    let body = problem(publish_draft(&app, &beta).await, 422).await;
    refused(
        &body,
        "workflow_cycle",
        "nodes[0].config.workflow",
        "cycle of workflows calling one another and failure handlers: Beta → Alpha → Handler (Alpha's failure handler) → Beta",
    );
}

/// Publishes `id`'s draft as the store would, past the publish checks — as a version
/// published before them, or a cycle they cannot see, would be.
async fn publish_unchecked(app: &TestApp, id: &str) {
    let store = app.server_store();
    let id = uuid::Uuid::parse_str(id).unwrap();
    let record = store.get_workflow(id).await.unwrap().unwrap();
    let version = trellis::store::NewVersion {
        note: None,
        published_by: "test".into(),
        now: chrono::Utc::now(),
        stuck_after: vec![],
    };
    store.publish(id, record.draft_rev, &version).await.unwrap();
}

async fn instances_of(app: &TestApp, workflow: &str) -> Vec<String> {
    let page: InstancePage = app
        .get(&format!("/api/v1/instances?workflow={workflow}&limit=500"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    page.items.into_iter().map(|i| i.id).collect()
}

async fn a_handler_loop_made_past_publishing_ends_at_the_lineage_bound(app: TestApp) {
    // Alpha fails and its handler calls Alpha again: without a bound, without end.
    let handler = published(&app, "Handler", noop()).await;
    let alpha = published(&app, "Alpha", failing_handled_by(&handler)).await;
    save_draft(&app, &handler, callers(&alpha)[0].1.clone()).await;
    publish_unchecked(&app, &handler).await;

    let root = app.start(&alpha, json!({})).await;
    let (mut failed, mut handlers) = (root.clone(), 0);
    loop {
        app.wait_finished(&failed).await;
        for _ in 0..1_500 {
            if pending_items(&app.database_url, &failed).await == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let Some(link) = app.instance(&failed).await.failure_handler else { break };
        handlers += 1;
        assert!(handlers <= MAX_FAILURE_HANDLER_DEPTH, "the loop goes past the bound");
        let run = app.wait_finished(&link.instance).await;
        assert_eq!(run.summary.status, InstanceStatus::Failed, "the handler's call of Alpha failed");
        failed = node(&run, "sub").child.clone().expect("the handler called Alpha");
    }
    assert_eq!(handlers, MAX_FAILURE_HANDLER_DEPTH, "each handler run deepened the chain");
    let history = crate::traces::history(&app, &failed).await;
    let note = history.iter().find_map(|e| e["note"].as_str()).unwrap_or_else(|| panic!("no note in {history:?}"));
    assert!(note.contains("the failure handler was not started"), "{note}");
    assert!(note.contains(&format!("{MAX_FAILURE_HANDLER_DEPTH} deep")) && note.contains(&root), "{note}");
    let counts = (instances_of(&app, &alpha).await.len(), instances_of(&app, &handler).await.len());
    assert_eq!(counts, (MAX_FAILURE_HANDLER_DEPTH as usize + 1, MAX_FAILURE_HANDLER_DEPTH as usize));
}

both_backends!(
    a_handler_calling_the_workflow_it_handles_is_refused_either_way_round,
    a_longer_cycle_through_a_handler_is_named_in_order,
    a_handler_loop_made_past_publishing_ends_at_the_lineage_bound
);
