//! Failure handlers (`settings.on_failure`): a failed or timed-out instance starts its
//! workflow's handler once per failed run, with the documented input; the two instances link
//! to each other; publishing refuses handlers that cannot run and cycles of handlers.

use crate::common::{both_backends, problem, TestApp};
use crate::subworkflows::{create, publish_draft, published, save_draft};
use serde_json::{json, Value};
use trellis_model::api::{InstanceDetail, InstancePage};
use trellis_model::InstanceStatus;

/// `definition` with `settings.on_failure` naming `handler`.
fn handled_by(mut definition: Value, handler: &str) -> Value {
    definition["settings"] = json!({"on_failure": {"workflow": handler, "version": "latest"}});
    definition
}

fn noop() -> Value {
    json!({"nodes": [{"id": "note", "type": "noop"}]})
}

/// `first -> boom`: `boom` always fails with "card declined".
fn failing() -> Value {
    json!({
        "nodes": [{"id": "first", "type": "noop"}, {"id": "boom", "type": "fail", "config": {"message": "card declined"}}],
        "edges": [{"from": "first", "to": "boom"}]
    })
}

/// The instances of `workflow`, newest first.
async fn instances_of(app: &TestApp, workflow: &str) -> Vec<String> {
    let page: InstancePage =
        app.get(&format!("/api/v1/instances?workflow={workflow}")).send().await.unwrap().json().await.unwrap();
    page.items.into_iter().map(|i| i.id).collect()
}

/// `on_failure` work items of `instance` still in the queue, read from the database.
pub async fn pending_items(database_url: &str, instance: &str) -> i64 {
    let id = uuid::Uuid::parse_str(instance).unwrap();
    let sql = "SELECT COUNT(*) FROM work WHERE kind = 'on_failure' AND instance_id = $1";
    if database_url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(database_url).await.unwrap();
        sqlx::query_scalar(sql).bind(id).fetch_one(&pool).await.unwrap()
    } else {
        let pool = sqlx::SqlitePool::connect(database_url).await.unwrap();
        sqlx::query_scalar(sql).bind(id).fetch_one(&pool).await.unwrap()
    }
}

/// Waits until `failed`'s handler items are consumed; returns its (latest) handler run.
async fn handled(app: &TestApp, failed: &str) -> InstanceDetail {
    let linked = app.wait_for(failed, |i| i.failure_handler.is_some()).await;
    for _ in 0..1_500 {
        if pending_items(&app.database_url, failed).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(pending_items(&app.database_url, failed).await, 0, "the on_failure item was consumed");
    app.wait_finished(&linked.failure_handler.unwrap().instance).await
}

async fn a_failed_instance_starts_its_handler_once_with_the_documented_input(app: TestApp) {
    let handler = published(&app, "alert on-call", noop()).await;
    let workflow = published(&app, "charge orders", handled_by(failing(), &handler)).await;
    let id = app.start(&workflow, json!({"input": {"order": 7}})).await;
    let failed = app.wait_finished(&id).await;
    assert_eq!(failed.summary.status, InstanceStatus::Failed);

    let run = handled(&app, &id).await;
    assert_eq!(run.summary.status, InstanceStatus::Succeeded);
    assert_eq!(run.summary.workflow_id, handler);
    let expected = json!({"instance": {
        "id": id,
        "workflow_id": workflow,
        "workflow_name": "charge orders",
        "version": 1,
        "status": "failed",
        "error": "node `boom` failed: card declined",
        "failed_node": "boom",
        "input": {"order": 7},
        "url": format!("/instances/{id}"),
    }});
    assert_eq!(run.input, expected);
    assert_eq!(instances_of(&app, &handler).await, vec![run.summary.id.clone()], "exactly one handler run");

    // The links, both ways, on the wire.
    let wire = app.instance_json(&id).await;
    let link = json!({"instance": run.summary.id, "workflow_id": handler, "workflow_name": "alert on-call"});
    assert_eq!(wire["failure_handler"], link);
    assert_eq!(wire["handles_failure_of"], Value::Null);
    let back = app.instance_json(&run.summary.id).await;
    assert_eq!(
        back["handles_failure_of"],
        json!({"instance": id, "workflow_id": workflow, "workflow_name": "charge orders"})
    );
    assert_eq!(back["failure_handler"], Value::Null);
}

async fn a_timed_out_instance_starts_its_handler(app: TestApp) {
    let handler = published(&app, "handler", noop()).await;
    let mut definition = handled_by(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]}), &handler);
    definition["settings"]["timeout_ms"] = json!(100);
    let workflow = published(&app, "slow", definition).await;
    let id = app.start(&workflow, json!({})).await;
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::TimedOut);
    let run = handled(&app, &id).await;
    assert_eq!(run.input["instance"]["status"], "timed_out");
    assert_eq!(run.input["instance"]["error"], "the instance exceeded its timeout");
    assert_eq!(run.input["instance"]["failed_node"], Value::Null);
}

async fn succeeded_and_canceled_instances_start_no_handler(app: TestApp) {
    let handler = published(&app, "handler", noop()).await;
    let ok = published(&app, "fine", handled_by(noop(), &handler)).await;
    let gated =
        published(&app, "gated", handled_by(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]}), &handler)).await;
    let done = app.start(&ok, json!({})).await;
    assert_eq!(app.wait_finished(&done).await.summary.status, InstanceStatus::Succeeded);
    let waiting = app.start(&gated, json!({})).await;
    assert_eq!(app.post(&format!("/api/v1/instances/{waiting}/cancel")).send().await.unwrap().status(), 200);
    assert_eq!(app.wait_finished(&waiting).await.summary.status, InstanceStatus::Canceled);
    // The end's transaction would have written the item: none means none will ever start.
    for id in [&done, &waiting] {
        assert_eq!(pending_items(&app.database_url, id).await, 0);
        assert_eq!(app.instance(id).await.failure_handler, None);
    }
    assert!(instances_of(&app, &handler).await.is_empty());
}

async fn a_retried_instance_that_fails_again_starts_a_second_handler_run(app: TestApp) {
    let handler = published(&app, "handler", noop()).await;
    let workflow = published(&app, "flaky", handled_by(failing(), &handler)).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_finished(&id).await;
    let first = handled(&app, &id).await.summary.id;
    let retried = app.post(&format!("/api/v1/instances/{id}/retry")).json(&json!({"from": "failed"})).send();
    assert_eq!(retried.await.unwrap().status(), 200);
    let again = app.wait_for(&id, |i| i.failure_handler.as_ref().is_some_and(|h| h.instance != first)).await;
    assert_eq!(again.summary.status, InstanceStatus::Failed);
    let second = handled(&app, &id).await.summary.id;
    let mut runs = instances_of(&app, &handler).await;
    runs.sort();
    assert_eq!(runs, vec![first, second], "one handler run per failed run");
}

async fn a_handler_that_cannot_start_is_noted_on_the_failed_instance(app: TestApp) {
    let handler = published(&app, "handler", noop()).await;
    let workflow = published(&app, "charge", handled_by(failing(), &handler)).await;
    assert_eq!(app.post(&format!("/api/v1/workflows/{handler}/archive")).send().await.unwrap().status(), 200);
    let id = app.start(&workflow, json!({})).await;
    app.wait_finished(&id).await;
    for _ in 0..1_500 {
        if pending_items(&app.database_url, &id).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let history = crate::traces::history(&app, &id).await;
    let note = history.iter().find_map(|e| e["note"].as_str()).unwrap_or_else(|| panic!("no note in {history:?}"));
    assert!(
        note.contains("failure handler was not started") && note.contains("`handler`") && note.contains("archived"),
        "{note}"
    );
    assert!(instances_of(&app, &handler).await.is_empty());
}

async fn a_failing_handler_run_starts_its_own_workflows_handler(app: TestApp) {
    let last = published(&app, "last resort", noop()).await;
    let handler = published(&app, "broken handler", handled_by(failing(), &last)).await;
    let workflow = published(&app, "charge", handled_by(failing(), &handler)).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_finished(&id).await;
    let first = handled(&app, &id).await;
    assert_eq!(first.summary.status, InstanceStatus::Failed);
    let second = handled(&app, &first.summary.id).await;
    assert_eq!(second.summary.workflow_id, last);
    assert_eq!(second.input["instance"]["id"], first.summary.id.as_str());
    assert_eq!(second.input["instance"]["workflow_name"], "broken handler");
    assert_eq!(second.handles_failure_of.unwrap().instance, first.summary.id);
}

async fn publishing_refuses_handlers_that_cannot_run_and_cycles(app: TestApp) {
    let refused = |code: &'static str, words: &'static [&'static str]| {
        move |body: Value| {
            let error = &body["errors"][0];
            assert_eq!(
                (error["code"].as_str(), error["path"].as_str()),
                (Some(code), Some("settings.on_failure.workflow")),
                "{body}"
            );
            let message = error["message"].as_str().unwrap();
            assert!(words.iter().all(|w| message.contains(w)), "{message} should name {words:?}");
        }
    };
    let a = create(&app, "alpha", noop()).await;
    save_draft(&app, &a, handled_by(noop(), "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")).await;
    refused("unknown_workflow", &["0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"])(
        problem(publish_draft(&app, &a).await, 422).await,
    );

    let draft_only = create(&app, "never published", noop()).await;
    save_draft(&app, &a, handled_by(noop(), &draft_only)).await;
    refused("unpublished_workflow", &["never published"])(problem(publish_draft(&app, &a).await, 422).await);

    save_draft(&app, &a, handled_by(noop(), &a)).await;
    refused("failure_handler_cycle", &["its own failure handler"])(problem(publish_draft(&app, &a).await, 422).await);

    let archived = published(&app, "old handler", noop()).await;
    assert_eq!(app.post(&format!("/api/v1/workflows/{archived}/archive")).send().await.unwrap().status(), 200);
    save_draft(&app, &a, handled_by(noop(), &archived)).await;
    refused("archived_workflow", &["old handler", "archived"])(problem(publish_draft(&app, &a).await, 422).await);

    // alpha → beta is fine; then beta → alpha closes a cycle, named in order.
    let b = published(&app, "beta", noop()).await;
    save_draft(&app, &a, handled_by(noop(), &b)).await;
    assert_eq!(publish_draft(&app, &a).await.status(), 201);
    save_draft(&app, &b, handled_by(noop(), &a)).await;
    refused("failure_handler_cycle", &["beta → alpha → beta"])(problem(publish_draft(&app, &b).await, 422).await);
    let report: Value = app
        .post(&format!("/api/v1/workflows/{b}/validate"))
        .json(&handled_by(noop(), &a))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (report["valid"].as_bool(), report["errors"][0]["code"].as_str()),
        (Some(false), Some("failure_handler_cycle"))
    );
}

both_backends!(
    a_failed_instance_starts_its_handler_once_with_the_documented_input,
    a_timed_out_instance_starts_its_handler,
    succeeded_and_canceled_instances_start_no_handler,
    a_retried_instance_that_fails_again_starts_a_second_handler_run,
    a_handler_that_cannot_start_is_noted_on_the_failed_instance,
    a_failing_handler_run_starts_its_own_workflows_handler,
    publishing_refuses_handlers_that_cannot_run_and_cycles
);
