//! A map's items start children with what the map's expressions made of a secret: the child's
//! stored input (and so its output, the export and content search) holds `[secret:NAME]`,
//! never the value — as a plain `subworkflow` node's child does. The inner node still gets the
//! value (it runs in the sandbox, in memory).

use crate::common::{both_backends, node, TestApp};
use serde_json::{json, Value};
use trellis_model::InstanceStatus;

const TOKEN: &str = "Map-Tok-7f3c9a2b-not-for-viewers";

/// A workflow whose output is its input.
async fn echo_workflow(app: &TestApp) -> String {
    app.publish(json!({"nodes": [{"id": "echo", "type": "transform", "config": {"expression": "input"}}]})).await
}

/// Runs `map_config` as node `each` and checks, as a viewer, everything stored about the run
/// and its children for the secret's value.
async fn runs_without_storing_the_value(app: &TestApp, map_config: Value) {
    let workflow = app.publish(json!({"nodes": [{"id": "each", "type": "map", "config": map_config}]})).await;
    let id = app.start(&workflow, json!({"input": {}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", node(&done, "each").error);
    let viewer = app.token_for("viewer").await;
    let read = |path: String| {
        let request = app.client.get(app.url(&path)).bearer_auth(&viewer).send();
        async move {
            let answer = request.await.unwrap();
            assert_eq!(answer.status(), 200, "{path}");
            answer.text().await.unwrap()
        }
    };

    let items: Value = serde_json::from_str(&read(format!("/api/v1/instances/{id}/nodes/each/items")).await).unwrap();
    let child = items["items"][0]["child"].as_str().expect("the item names its child").to_owned();
    let child_json: Value = serde_json::from_str(&read(format!("/api/v1/instances/{child}")).await).unwrap();
    assert_eq!(child_json["input"], json!({"tok": "[secret:TOK]"}), "{child_json}");
    assert_eq!(child_json["output"], json!({"echo": {"tok": "[secret:TOK]"}}), "{child_json}");
    let map_output = node(&app.instance(&id).await, "each").output.clone().unwrap();
    assert_eq!(map_output["results"][0]["echo"]["tok"], "[secret:TOK]", "{map_output}");

    let stored = [
        read(format!("/api/v1/instances/{id}")).await,
        read(format!("/api/v1/instances/{child}")).await,
        items.to_string(),
        read(format!("/api/v1/instances/{child}/history")).await,
        read("/api/v1/instances/export?format=jsonl".into()).await,
    ];
    for text in stored {
        assert!(!text.contains(TOKEN), "a viewer reads the secret:\n{text}");
    }
    let search = read(format!("/api/v1/instances?input.tok={TOKEN}")).await;
    assert_eq!(serde_json::from_str::<Value>(&search).unwrap()["items"], json!([]), "content search finds the value");
}

async fn a_map_over_a_workflow_stores_items_made_of_a_secret_redacted(app: TestApp) {
    crate::secrets::create_secret(&app, "TOK", TOKEN).await;
    let echo = echo_workflow(&app).await;
    let config = json!({"items": "[{'tok': secret.TOK}]", "workflow": {"workflow": echo}});
    runs_without_storing_the_value(&app, config).await;
}

async fn an_inner_subworkflow_nodes_input_made_of_a_secret_is_stored_redacted(app: TestApp) {
    crate::secrets::create_secret(&app, "TOK", TOKEN).await;
    let echo = echo_workflow(&app).await;
    let inner = json!({"type": "subworkflow", "config": {"workflow": echo, "input": "{'tok': secret.TOK}"}});
    runs_without_storing_the_value(&app, json!({"items": "[1]", "node": inner})).await;
}

/// The inner node's own evaluation sees the item as made: the value, in memory only.
async fn the_inner_node_still_evaluates_with_the_value(app: TestApp) {
    crate::secrets::create_secret(&app, "TOK", TOKEN).await;
    let inner = json!({"type": "transform", "config": {"expression": format!("item.tok == '{TOKEN}'")}});
    let workflow =
        app.publish(json!({"nodes": [{"id": "each", "type": "map", "config": {"items": "[{'tok': secret.TOK}]", "node": inner}}]})).await;
    let done = app.wait_finished(&app.start(&workflow, json!({"input": {}})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{:?}", node(&done, "each").error);
    assert_eq!(node(&done, "each").output.clone().unwrap()["results"], json!([true]));
}

both_backends!(
    a_map_over_a_workflow_stores_items_made_of_a_secret_redacted,
    an_inner_subworkflow_nodes_input_made_of_a_secret_is_stored_redacted,
    the_inner_node_still_evaluates_with_the_value
);
