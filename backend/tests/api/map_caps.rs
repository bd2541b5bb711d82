//! A map's results are held to the output caps as its items end, not once all have: the first
//! item whose output brings the results over the per-node cap (or the instance's outputs over
//! the per-instance cap) stops the map, whatever `on_item_failure` says, the items still to run
//! are canceled, and the over-cap output is stored nowhere.

use crate::common::{node, Backend, TestApp};
use serde_json::{json, Value};
use trellis::config::ServeConfig;
use trellis_model::api::MapItemPage;
use trellis_model::InstanceStatus;

const ITEMS: usize = 200;

fn small_caps(serve: &mut ServeConfig) {
    serve.max_node_output_bytes = 10_000;
    serve.max_instance_output_bytes = 14_000;
}

/// `before -> each`: `before` outputs `before_bytes` of text; `each` maps over [`ITEMS`]
/// items, each giving about 1,000 bytes.
fn definition(before_bytes: usize) -> Value {
    let inner = json!({"type": "transform", "config": {"expression": "'x' * 1000"}});
    json!({
        "nodes": [
            {"id": "before", "type": "transform", "config": {"expression": format!("'y' * {before_bytes}")}},
            {"id": "each", "type": "map", "config": {
                "items": format!("range({ITEMS})"), "node": inner, "max_parallel": 2, "on_item_failure": "continue"}}
        ],
        "edges": [{"from": "before", "to": "each"}]
    })
}

/// Runs the map; checks it stopped early at one item naming the cap; returns the error.
async fn stops_early(app: &TestApp, before_bytes: usize) -> String {
    let workflow = app.publish(definition(before_bytes)).await;
    let id = app.start(&workflow, json!({"input": {}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let error = node(&done, "each").error.clone().unwrap_or_default();
    assert!(node(&done, "each").output.is_none());

    let page: MapItemPage = app
        .get(&format!("/api/v1/instances/{id}/nodes/each/items?limit=500"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let count = |status: &str| page.counts.get(status).copied().unwrap_or(0) as usize;
    let with_output = page.items.iter().filter(|item| item.output.is_some()).count();
    assert!(count("succeeded") <= 10, "at most the cap's worth of items kept their output: {:?}", page.counts);
    assert_eq!(with_output, count("succeeded"), "only succeeded items store an output");
    assert_eq!(count("failed"), 1, "one item broke the cap: {:?}", page.counts);
    let over = page.items.iter().find(|item| item.status.as_str() == "failed").unwrap();
    assert!(error.starts_with(&format!("item {}'s output (1002 bytes)", over.index)), "{error}");
    assert_eq!(over.error.as_deref(), Some(error.as_str()));
    assert!(count("canceled") >= ITEMS - 15, "the rest were canceled, not run: {:?}", page.counts);
    error
}

async fn a_map_stops_at_the_first_item_over_the_node_cap(app: TestApp) {
    let error = stops_early(&app, 10).await;
    assert!(error.contains("over the cap of 10000 bytes per node output (TRELLIS_MAX_NODE_OUTPUT_BYTES)"), "{error}");
}

async fn a_map_stops_at_the_first_item_over_the_instance_cap(app: TestApp) {
    let error = stops_early(&app, 8_000).await;
    assert!(error.contains("over the cap of 14000 bytes per instance (TRELLIS_MAX_INSTANCE_OUTPUT_BYTES)"), "{error}");
}

macro_rules! with_small_caps {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(TestApp::spawn_with(Backend::Sqlite, small_caps).await).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(TestApp::spawn_with(Backend::Postgres, small_caps).await).await
            }
        }
    )*};
}

with_small_caps!(a_map_stops_at_the_first_item_over_the_node_cap, a_map_stops_at_the_first_item_over_the_instance_cap);
