//! Live event streams under pressure: resuming at random points while entries are being
//! written, a stalled client beside a reading one, and delivery across processes.

use crate::common::{both_backends, gated, Backend, TestApp};
use crate::process::Process;
use crate::sse::{SseEvent, SseStream};
use crate::traces::{events, history};
use rand::RngExt;
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::NodeStatus;

/// A guard against hanging forever when something is broken; not a timing assertion.
const HANG: Duration = Duration::from_secs(60);

/// `count` short delays in a row: entries keep coming for a while.
fn slow_chain(count: usize) -> Value {
    let nodes: Vec<Value> =
        (0..count).map(|i| json!({"id": format!("d{i}"), "type": "delay", "config": {"duration_ms": 10}})).collect();
    let edges: Vec<Value> = (1..count).map(|i| json!({"from": format!("d{}", i - 1), "to": format!("d{i}")})).collect();
    json!({"nodes": nodes, "edges": edges})
}

/// A signal gate, then `width` no-ops side by side.
fn gated_fan_out(width: usize) -> Value {
    let mut nodes = vec![json!({"id": "gate", "type": "wait_signal"})];
    nodes.extend((0..width).map(|i| json!({"id": format!("n{i}"), "type": "noop"})));
    let edges: Vec<Value> = (0..width).map(|i| json!({"from": "gate", "to": format!("n{i}")})).collect();
    json!({"nodes": nodes, "edges": edges})
}

fn seqs(events: &[SseEvent]) -> Vec<i64> {
    events.iter().map(SseEvent::seq).collect()
}

async fn resume_at_random_points(app: &TestApp, instance: &str) -> Vec<SseEvent> {
    let mut received: Vec<SseEvent> = Vec::new();
    loop {
        let last = received.last().map(SseEvent::seq);
        let mut stream = events(app, instance, last).await;
        let take = rand::rng().random_range(1..=6);
        for _ in 0..take {
            match stream.next().await {
                Some(event) => received.push(event),
                None => return received,
            }
        }
        drop(stream); // hang up mid-stream
        tokio::time::sleep(Duration::from_millis(rand::rng().random_range(0..15))).await;
    }
}

async fn resuming_at_random_points_while_entries_are_written_loses_and_repeats_nothing(app: TestApp) {
    let workflow = app.publish(slow_chain(30)).await;
    let id = app.start(&workflow, json!({})).await;
    let received = tokio::time::timeout(HANG, resume_at_random_points(&app, &id)).await.expect("the stream ends");
    let stored: Vec<i64> = history(&app, &id).await.iter().map(|h| h["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs(&received), stored, "the union of the resumed streams is the history, in order, once each");
    assert_eq!(received.last().unwrap().data["status"], "succeeded");
}

async fn a_stalled_client_does_not_hold_up_another(app: TestApp) {
    let workflow = app.publish(gated_fan_out(300)).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_for(&id, |i| i.nodes.iter().any(|n| n.status == NodeStatus::Waiting)).await;
    // Connected and never read until the end of the test.
    let mut stalled = events(&app, &id, None).await;
    let mut reader = events(&app, &id, None).await;
    let signal = app
        .post(&format!("/api/v1/instances/{id}/signal"))
        .json(&json!({"node": "gate", "payload": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(signal.status(), 200);
    let read = tokio::time::timeout(HANG, reader.rest()).await.expect("the reading client gets everything");
    assert_eq!(read.last().unwrap().data["status"], "succeeded");
    let stored = history(&app, &id).await;
    assert_eq!(read.len(), stored.len());
    // The stalled client, once it reads, still gets the whole history in order.
    let late = tokio::time::timeout(HANG, stalled.rest()).await.expect("the stalled client catches up");
    assert_eq!(seqs(&late), seqs(&read));
}
both_backends!(
    resuming_at_random_points_while_entries_are_written_loses_and_repeats_nothing,
    a_stalled_client_does_not_hold_up_another
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_one_process_sees_what_another_process_writes() {
    // No periodic rereading here: only the other process's announcements can deliver.
    let app = TestApp::spawn_with(Backend::Postgres, |serve| serve.sse_resync_ms = 3_600_000).await;
    let producer = Process::start(&app.database_url, &[]).await;
    let workflow = app.publish(gated()).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_for(&id, |i| i.nodes[0].status == NodeStatus::Waiting).await;
    let mut stream = events(&app, &id, None).await;
    let mut feed = SseStream::new(app.get(&format!("/api/v1/events?workflow={workflow}")).send().await.unwrap());
    assert_eq!(feed.next().await.unwrap().event, "counts");
    let replayed = tokio::time::timeout(HANG, async {
        let mut replayed = Vec::new();
        while replayed.last().is_none_or(|e: &SseEvent| !(e.event == "node" && e.data["status"] == "waiting")) {
            replayed.push(stream.next().await.unwrap());
        }
        replayed
    })
    .await
    .expect("the history so far is replayed");

    let signal = app
        .client
        .post(format!("{}/api/v1/instances/{id}/signal", producer.base))
        .bearer_auth(&app.admin_token)
        .json(&json!({"node": "gate", "payload": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(signal.status(), 200, "signaled through the other process");
    let live = tokio::time::timeout(HANG, stream.rest()).await.expect("the other process's entries arrive");
    let last = live.last().unwrap();
    assert_eq!((last.event.as_str(), last.data["status"].as_str()), ("instance", Some("succeeded")));
    let all: Vec<i64> = replayed.iter().chain(&live).map(SseEvent::seq).collect();
    assert_eq!(all, (1..=all.len() as i64).collect::<Vec<_>>());
    let finished = tokio::time::timeout(HANG, feed.next()).await.expect("the feed hears it too").unwrap();
    assert_eq!(
        (finished.data["instance_id"].as_str(), finished.data["status"].as_str()),
        (Some(id.as_str()), Some("succeeded"))
    );
    producer.kill_hard().await;
}
