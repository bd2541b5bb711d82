//! The `map` node: runs an inner node or a workflow once per item, results in item order,
//! both failure policies, `max_parallel` as an outside server sees it, the cap on items, and
//! a retry that reruns only the failed items.

use crate::common::{both_backends, node, problem, TestApp};
use crate::ledger;
use serde_json::{json, Value};
use trellis::config::ServeConfig;
use trellis_model::api::InstanceDetail;
use trellis_model::{InstanceStatus, NodeStatus};

/// A workflow of one map node with `config`.
fn mapping(config: Value) -> Value {
    json!({"nodes": [{"id": "each", "type": "map", "config": config}]})
}

fn output_of(instance: &InstanceDetail) -> Value {
    node(instance, "each").output.clone().unwrap_or(Value::Null)
}

async fn run(app: &TestApp, definition: Value, input: Value) -> InstanceDetail {
    let workflow = app.publish(definition).await;
    let id = app.start(&workflow, json!({"input": input})).await;
    app.wait_finished(&id).await
}

async fn results_come_in_item_order_with_item_and_index_in_scope(app: TestApp) {
    let inner =
        json!({"type": "transform", "config": {"expression": "{'id': item.id, 'at': index, 'tag': input.tag}"}});
    let orders: Vec<Value> = (0..25).map(|i| json!({"id": format!("o{i}")})).collect();
    let done = run(
        &app,
        mapping(json!({"items": "input.orders", "node": inner, "max_parallel": 4})),
        json!({"orders": orders, "tag": "t"}),
    )
    .await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", done.summary.error);
    let output = output_of(&done);
    let results = output["results"].as_array().unwrap();
    assert_eq!(results.len(), 25);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result, &json!({"id": format!("o{i}"), "at": i, "tag": "t"}));
    }
    assert_eq!(output["errors"], json!([]));
    let items: Value = app
        .get(&format!("/api/v1/instances/{}/nodes/each/items?limit=10", done.summary.id))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(items["items"].as_array().unwrap().len(), 10, "{items}");
    assert_eq!(items["items"][3]["index"], 3);
    assert_eq!(items["items"][3]["status"], "succeeded");
    assert_eq!(items["items"][3]["output"]["id"], "o3");
    assert_eq!(items["counts"]["succeeded"], 25);
    assert_eq!(items["total"], 25);
}
both_backends!(results_come_in_item_order_with_item_and_index_in_scope);

/// A map whose items ask the ledger for the status in `item.code`.
fn statuses(addr: std::net::SocketAddr, policy: &str) -> Value {
    let url = format!("http://{addr}/status/{{{{ item }}}}/{{{{ instance.id }}}}/{{{{ index }}}}");
    mapping(json!({
        "items": "input.codes", "on_item_failure": policy,
        "node": {"type": "http", "config": {"method": "POST", "url": url}}
    }))
}

async fn continue_keeps_going_and_lists_failed_items(app: TestApp) {
    let (addr, _ledger) = ledger::start().await;
    let done = run(&app, statuses(addr, "continue"), json!({"codes": [200, 500, 200, 404]})).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", done.summary.error);
    let output = output_of(&done);
    assert_eq!(output["results"][0]["status"], 200);
    assert_eq!(output["results"][1], Value::Null);
    assert_eq!(output["results"][2]["status"], 200);
    assert_eq!(output["results"][3], Value::Null);
    let failed: Vec<u64> = output["errors"].as_array().unwrap().iter().map(|e| e["index"].as_u64().unwrap()).collect();
    assert_eq!(failed, vec![1, 3], "{output}");
    assert!(output["errors"][0]["error"].as_str().unwrap().contains("500"), "{output}");
    assert_eq!(output["errors"][1]["item"], "404", "{output}");
}
both_backends!(continue_keeps_going_and_lists_failed_items);

async fn fail_fails_the_node_naming_the_first_failed_index(app: TestApp) {
    let (addr, _ledger) = ledger::start().await;
    let done = run(&app, statuses(addr, "fail"), json!({"codes": [200, 200, 500]})).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let each = node(&done, "each");
    assert_eq!(each.status, NodeStatus::Failed);
    assert!(
        each.error.as_deref().unwrap().starts_with("item 2 (500) failed: HTTP 500"),
        "the failure names its index and item: {:?}",
        each.error
    );
}
both_backends!(fail_fails_the_node_naming_the_first_failed_index);

async fn max_parallel_holds_as_the_called_server_sees_it(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    let url = format!("http://{addr}/slow/{{{{ index }}}}");
    let definition = mapping(json!({
        "items": "input.n", "max_parallel": 3,
        "node": {"type": "http", "config": {"method": "GET", "url": url}}
    }));
    let done = run(&app, definition, json!({"n": [1, 2, 3, 4, 5, 6, 7, 8, 9]})).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", done.summary.error);
    assert_eq!(ledger.max_in_flight.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(ledger.calls.lock().unwrap().len(), 9);
}
both_backends!(max_parallel_holds_as_the_called_server_sees_it);

async fn items_that_are_not_a_list_or_too_many_fail_the_node_saying_why(app: TestApp) {
    let inner = json!({"type": "noop", "config": {}});
    let definition = mapping(json!({"items": "input.items", "node": inner}));
    for (input, expected) in [
        (json!({"items": {"a": 1}}), "`items` must give a list, but gave an object"),
        (json!({"items": null}), "`items` must give a list, but gave null"),
        (
            json!({"items": [1, 2, 3, 4, 5, 6]}),
            "`items` gave 6 items; a map runs over at most 5 (TRELLIS_MAP_MAX_ITEMS)",
        ),
    ] {
        let done = run(&app, definition.clone(), input).await;
        assert_eq!(done.summary.status, InstanceStatus::Failed);
        assert_eq!(node(&done, "each").error.as_deref(), Some(expected));
    }
}

fn small_cap(serve: &mut ServeConfig) {
    serve.map_max_items = 5;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_that_are_not_a_list_or_too_many_fail_on_sqlite() {
    items_that_are_not_a_list_or_too_many_fail_the_node_saying_why(
        TestApp::spawn_with(crate::common::Backend::Sqlite, small_cap).await,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_that_are_not_a_list_or_too_many_fail_on_postgres() {
    items_that_are_not_a_list_or_too_many_fail_the_node_saying_why(
        TestApp::spawn_with(crate::common::Backend::Postgres, small_cap).await,
    )
    .await
}

async fn a_bad_map_is_a_problem_naming_the_field(app: TestApp) {
    let workflow = app.create_workflow(json!({"name": "bad map", "definition": mapping(json!({"items": "input.x", "node": {"type": "noop", "config": {}}}))})).await.summary.id;
    for (config, path) in [
        (json!({"items": "input.x", "node": {"type": "map", "config": {}}}), "config.node.type"),
        (json!({"items": "input.x", "node": {"type": "noop", "config": {}}, "max_parallel": 0}), "config.max_parallel"),
        (json!({"items": "input.x", "node": {"type": "http", "config": {"url": "ftp://x"}}}), "config.node.config.url"),
        (json!({"items": "(", "node": {"type": "noop", "config": {}}}), "config.items"),
    ] {
        let saved = app
            .put(&format!("/api/v1/workflows/{workflow}/draft"))
            .header("If-Match", "*")
            .json(&mapping(config))
            .send()
            .await
            .unwrap();
        // Kept as a draft, with the problem at its field.
        assert_eq!(saved.status(), 200);
        let body: serde_json::Value = saved.json().await.unwrap();
        assert!(body["problems"].to_string().contains(path), "{path}: {body}");
    }
}
both_backends!(a_bad_map_is_a_problem_naming_the_field);

async fn a_thousand_items_finish_in_order(app: TestApp) {
    let inner = json!({"type": "transform", "config": {"expression": "item * 2"}});
    let done = run(&app, mapping(json!({"items": "range(1000)", "node": inner, "max_parallel": 50})), json!({})).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", done.summary.error);
    let results = output_of(&done)["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 1000);
    assert!(results.iter().enumerate().all(|(i, r)| r == &json!(i * 2)));
}
both_backends!(a_thousand_items_finish_in_order);

async fn a_map_over_a_workflow_starts_a_child_per_item(app: TestApp) {
    let doubler = app
        .publish(
            json!({"nodes": [{"id": "double", "type": "transform", "config": {"expression": "{'n': input * 2}"}}]}),
        )
        .await;
    let done =
        run(&app, mapping(json!({"items": "input.ns", "workflow": {"workflow": doubler}})), json!({"ns": [1, 2, 3]}))
            .await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", done.summary.error);
    let results = output_of(&done)["results"].clone();
    assert_eq!(results, json!([{"double": {"n": 2}}, {"double": {"n": 4}}, {"double": {"n": 6}}]));
    let items: Value = app
        .get(&format!("/api/v1/instances/{}/nodes/each/items", done.summary.id))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let child = items["items"][1]["child"].as_str().expect("the item names its child instance").to_owned();
    let child = app.instance_json(&child).await;
    assert_eq!(child["parent"]["instance"], json!(done.summary.id));
    assert_eq!(child["input"], json!(2));
}
both_backends!(a_map_over_a_workflow_starts_a_child_per_item);

async fn a_retry_from_the_failed_nodes_reruns_only_the_failed_items(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    // One at a time, so item 0 has ended when item 1 fails (and item 2 never starts).
    let mut definition = statuses(addr, "fail");
    definition["nodes"][0]["config"]["max_parallel"] = json!(1);
    let done = run(&app, definition, json!({"codes": [200, 500, 200]})).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let retried = app
        .post(&format!("/api/v1/instances/{}/retry", done.summary.id))
        .json(&json!({"from": "failed"}))
        .send()
        .await
        .unwrap();
    assert!(retried.status().is_success(), "{}", retried.text().await.unwrap());
    let again =
        app.wait_for(&done.summary.id, |i| i.summary.status.is_terminal() && node(i, "each").attempts == 2).await;
    assert_eq!(again.summary.status, InstanceStatus::Failed);
    let calls = ledger.calls.lock().unwrap().clone();
    let per_index = |i: usize| calls.iter().filter(|c| c.path.ends_with(&format!("/{i}"))).count();
    assert_eq!(per_index(0), 1, "a succeeded item is not run again: {calls:?}");
    assert_eq!(per_index(1), 2, "the failed item runs again: {calls:?}");
    assert_eq!(per_index(2), 0, "the map stops at the failed item: {calls:?}");
}
both_backends!(a_retry_from_the_failed_nodes_reruns_only_the_failed_items);

async fn publishing_a_map_over_a_missing_workflow_is_refused(app: TestApp) {
    let missing = uuid::Uuid::now_v7().to_string();
    let definition = mapping(json!({"items": "input.ns", "workflow": {"workflow": missing}}));
    let workflow = app.create_workflow(json!({"name": "calls nothing", "definition": definition})).await.summary.id;
    let published = app.post(&format!("/api/v1/workflows/{workflow}/versions")).json(&json!({})).send().await.unwrap();
    let body = problem(published, 422).await;
    assert!(body.to_string().contains(&missing), "{body}");
}
both_backends!(publishing_a_map_over_a_missing_workflow_is_refused);

async fn canceling_the_instance_stops_its_map(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    let url = format!("http://{addr}/slow/{{{{ index }}}}");
    let definition = mapping(json!({
        "items": "input.n", "max_parallel": 2,
        "node": {"type": "http", "config": {"method": "GET", "url": url}}
    }));
    let workflow = app.publish(definition).await;
    let id = app.start(&workflow, json!({"input": {"n": (0..20).collect::<Vec<_>>()}})).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let canceled = app.post(&format!("/api/v1/instances/{id}/cancel")).json(&json!({})).send().await.unwrap();
    assert_eq!(canceled.status(), 200);
    // 20 items of 300 ms, 2 at a time, would take 3 s; the map stops within an item or two.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let calls = ledger.calls.lock().unwrap().len();
    assert!(calls <= 8, "the map stopped when its instance was canceled: {calls} calls");
    assert_eq!(app.instance(&id).await.summary.status, InstanceStatus::Canceled);
}
both_backends!(canceling_the_instance_stops_its_map);

async fn a_script_per_item_sees_item_and_index(app: TestApp) {
    let inner = json!({"type": "script", "config": {"source": "return `${index}:${item.name.toUpperCase()}`;"}});
    let names = json!({"people": [{"name": "ada"}, {"name": "grace"}]});
    let done = run(&app, mapping(json!({"items": "input.people", "node": inner})), names).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", done.summary.error);
    assert_eq!(output_of(&done)["results"], json!(["0:ADA", "1:GRACE"]));
}
both_backends!(a_script_per_item_sees_item_and_index);
