//! Execution traces: the history, its spans, and the event stream's replay and resume.

use crate::common::{both_backends, gated, problem, TestApp};
use crate::sse::{SseEvent, SseStream};
use serde_json::{json, Value};
use std::collections::HashMap;
use trellis_model::NodeStatus;

/// delay → fail once then succeed (retried after a backoff) → noop.
fn timed_chain() -> Value {
    json!({
        "nodes": [
            {"id": "wait", "type": "delay", "config": {"duration_ms": 30}},
            {"id": "flaky", "type": "fail", "config": {"fail_attempts": 1}, "retry": {"max_attempts": 2, "backoff_ms": 20}},
            {"id": "done", "type": "noop"}
        ],
        "edges": [{"from": "wait", "to": "flaky"}, {"from": "flaky", "to": "done"}]
    })
}

pub async fn events(app: &TestApp, instance: &str, last_event_id: Option<i64>) -> SseStream {
    let mut request = app.get(&format!("/api/v1/instances/{instance}/events"));
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id.to_string());
    }
    SseStream::new(request.send().await.unwrap())
}

/// The whole history, page by page.
pub async fn history(app: &TestApp, instance: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut after = 0;
    loop {
        let path = format!("/api/v1/instances/{instance}/history?after={after}&limit=200");
        let body: Value = app.get(&path).send().await.unwrap().json().await.unwrap();
        items.extend(body["items"].as_array().unwrap().iter().cloned());
        match body["next_after"].as_i64() {
            Some(next) => after = next,
            None => return items,
        }
    }
}

/// Spans by id, from their start and end events, checking each starts once and ends once.
fn spans(events: &[SseEvent]) -> HashMap<String, (Value, Value)> {
    let mut started: HashMap<String, Value> = HashMap::new();
    let mut spans = HashMap::new();
    for e in events {
        let id = e.data["span_id"].as_str().unwrap_or_default().to_owned();
        match e.event.as_str() {
            "span_start" => assert!(started.insert(id, e.data.clone()).is_none(), "a span starts once: {}", e.data),
            "span_end" => {
                let start = started.remove(&id).unwrap_or_else(|| panic!("span ended without starting: {}", e.data));
                assert!(spans.insert(id, (start, e.data.clone())).is_none());
            }
            _ => {}
        }
    }
    assert!(started.is_empty(), "spans left open: {started:?}");
    spans
}

fn by_name<'a>(spans: &'a HashMap<String, (Value, Value)>, name: &str) -> Vec<&'a Value> {
    spans.values().filter(|(_, end)| end["name"] == name).map(|(_, end)| end).collect()
}

async fn a_finished_instance_replays_its_whole_history_as_spans_then_ends(app: TestApp) {
    let workflow = app.publish(timed_chain()).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_finished(&id).await;
    let events = events(&app, &id, None).await.rest().await;
    let seqs: Vec<i64> = events.iter().map(SseEvent::seq).collect();
    assert_eq!(seqs, (1..=events.len() as i64).collect::<Vec<_>>(), "seq 1, 2, 3, ... without gaps");
    let last = events.last().unwrap();
    assert_eq!((last.event.as_str(), last.data["status"].as_str()), ("instance", Some("succeeded")));
    assert!(events.iter().all(|e| e.data["instance_id"] == id.as_str() && e.data["at"].is_string()));

    let spans = spans(&events);
    let (_, root) = spans.values().find(|(_, end)| end["kind"] == "instance").unwrap();
    assert_eq!((root["status"].as_str(), root["parent_span_id"].as_null()), (Some("ok"), Some(())));
    assert_eq!(root["name"], "engine test");
    let trace_id = root["trace_id"].as_str().unwrap();
    assert_eq!(trace_id.len(), 32);
    for (_, end) in spans.values() {
        assert_eq!(end["trace_id"], trace_id, "one trace");
        assert_eq!(end["span_id"].as_str().unwrap().len(), 16);
        assert!(end["end"].as_str().unwrap() >= end["start"].as_str().unwrap(), "{end}");
    }
    let attempts = by_name(&spans, "fail flaky");
    let statuses: Vec<(i64, &str)> = attempts
        .iter()
        .map(|s| (s["attributes"]["trellis.attempt"].as_i64().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses.len(), 2);
    assert!(statuses.contains(&(1, "error")) && statuses.contains(&(2, "ok")), "{statuses:?}");
    assert!(attempts.iter().all(|s| s["parent_span_id"] == root["span_id"] && s["kind"] == "node"));
    let failed = attempts.iter().find(|s| s["status"] == "error").unwrap();
    assert_eq!(failed["attributes"]["error"], "failed on purpose");

    let backoff = by_name(&spans, "retry backoff flaky");
    assert_eq!(backoff.len(), 1);
    assert_eq!(
        (backoff[0]["kind"].as_str(), backoff[0]["attributes"]["trellis.backoff_ms"].as_i64()),
        (Some("timer"), Some(20))
    );
    let delay_attempt = by_name(&spans, "delay wait")[0];
    let timer = by_name(&spans, "timer wait")[0];
    assert_eq!((timer["kind"].as_str(), timer["status"].as_str()), (Some("timer"), Some("ok")));
    assert_eq!(timer["parent_span_id"], delay_attempt["span_id"], "the delay's timer is a child of its attempt");

    let node_changes: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.event == "node")
        .map(|e| (e.data["node"].as_str().unwrap().to_owned(), e.data["status"].as_str().unwrap().to_owned()))
        .collect();
    for expected in [
        ("wait", "running"),
        ("wait", "waiting"),
        ("wait", "succeeded"),
        ("flaky", "waiting"),
        ("flaky", "succeeded"),
        ("done", "succeeded"),
    ] {
        assert!(node_changes.contains(&(expected.0.into(), expected.1.into())), "{expected:?} in {node_changes:?}");
    }

    let stored = history(&app, &id).await;
    assert_eq!(stored.len(), events.len());
    assert!(stored
        .iter()
        .zip(&events)
        .all(|(h, e)| h["seq"].as_i64() == Some(e.seq()) && h["event"] == e.event.as_str()));
}

async fn last_event_id_resumes_right_after_it(app: TestApp) {
    let workflow = app.publish(timed_chain()).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_finished(&id).await;
    let all = events(&app, &id, None).await.rest().await;
    let resumed = events(&app, &id, Some(3)).await.rest().await;
    assert_eq!(resumed, all[3..].to_vec());
    let caught_up = events(&app, &id, Some(all.len() as i64)).await.rest().await;
    assert!(caught_up.is_empty(), "nothing after the terminal entry: the stream just ends");
    let after =
        SseStream::new(app.get(&format!("/api/v1/instances/{id}/events?after=5")).send().await.unwrap()).rest().await;
    assert_eq!(after.first().map(SseEvent::seq), Some(6));
}

async fn a_live_stream_follows_the_instance_and_ends_after_it_finishes(app: TestApp) {
    let workflow = app.publish(gated()).await;
    let id = app.start(&workflow, json!({})).await;
    let mut stream = events(&app, &id, None).await;
    // Everything up to the gate waiting arrives before anything else happens.
    loop {
        let event = stream.next().await.unwrap();
        if event.event == "node" && event.data["node"] == "gate" && event.data["status"] == "waiting" {
            break;
        }
    }
    let signaled = app
        .post(&format!("/api/v1/instances/{id}/signal"))
        .json(&json!({"node": "gate", "payload": {"ok": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(signaled.status(), 200);
    let rest = stream.rest().await;
    let last = rest.last().unwrap();
    assert_eq!((last.event.as_str(), last.data["status"].as_str()), ("instance", Some("succeeded")));
    let signal_wait = rest.iter().find(|e| e.event == "span_end" && e.data["kind"] == "signal").unwrap();
    assert_eq!(signal_wait.data["attributes"]["trellis.node"], "gate");
}

async fn a_queued_instance_records_which_limit_held_it(app: TestApp) {
    let workflow = app
        .publish(json!({
            "nodes": [{"id": "gate", "type": "wait_signal"}],
            "edges": [],
            "settings": {"max_concurrent_instances": 1, "on_limit": "queue"}
        }))
        .await;
    let first = app.start(&workflow, json!({})).await;
    let second = app.start(&workflow, json!({})).await;
    app.wait_for(&first, |i| i.nodes[0].status == NodeStatus::Waiting).await;
    let signal = json!({"node": "gate", "payload": {}});
    app.post(&format!("/api/v1/instances/{first}/signal")).json(&signal).send().await.unwrap();
    app.wait_for(&second, |i| i.nodes[0].status == NodeStatus::Waiting).await;
    app.post(&format!("/api/v1/instances/{second}/signal")).json(&signal).send().await.unwrap();
    let events = events(&app, &second, None).await.rest().await;
    let kinds: Vec<(&str, &str)> =
        events.iter().take(3).map(|e| (e.event.as_str(), e.data["kind"].as_str().unwrap_or_default())).collect();
    assert_eq!(kinds, [("span_start", "instance"), ("instance", ""), ("span_start", "queue")]);
    assert_eq!(events[1].data["status"], "queued");
    let spans = spans(&events);
    let (_, queue) = spans.values().find(|(_, end)| end["kind"] == "queue").unwrap();
    assert_eq!(queue["attributes"]["trellis.limit"], "max_concurrent_instances");
    assert_eq!(queue["status"], "ok");
    let admitted = events.iter().find(|e| e.event == "instance" && e.data["status"] == "running").unwrap();
    assert_eq!(admitted.data["previous"], "queued");
}

async fn bad_stream_requests_get_problems(app: TestApp) {
    let workflow = app.publish(crate::common::chain()).await;
    let id = app.start(&workflow, json!({})).await;
    let garbage =
        app.get(&format!("/api/v1/instances/{id}/events")).header("last-event-id", "abc").send().await.unwrap();
    let body = problem(garbage, 400).await;
    assert!(body["detail"].as_str().unwrap().contains("Last-Event-ID"), "{body}");
    let missing = uuid::Uuid::now_v7();
    problem(app.get(&format!("/api/v1/instances/{missing}/events")).send().await.unwrap(), 404).await;
    problem(app.get(&format!("/api/v1/instances/{missing}/history")).send().await.unwrap(), 404).await;
    problem(app.get("/api/v1/instances/not-a-uuid/events").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/events?workflow=nope").send().await.unwrap(), 400).await;
}

async fn the_dashboard_feed_sends_counts_then_status_changes(app: TestApp) {
    let workflow = app.publish(crate::common::chain()).await;
    let other = app.publish(crate::common::chain()).await;
    let done = app.start(&workflow, json!({})).await;
    app.wait_finished(&done).await;
    let mut feed = SseStream::new(app.get(&format!("/api/v1/events?workflow={workflow}")).send().await.unwrap());
    let counts = feed.next().await.unwrap();
    assert_eq!(counts.event, "counts");
    assert_eq!(
        (counts.data["counts"]["succeeded"].as_i64(), counts.data["counts"]["running"].as_i64()),
        (Some(1), Some(0))
    );
    app.start(&other, json!({})).await;
    let id = app.start(&workflow, json!({})).await;
    let mut seen = Vec::new();
    while seen.last().map(|s: &(String, String)| s.1.as_str()) != Some("succeeded") {
        let event = feed.next().await.unwrap();
        assert_eq!(event.event, "instance");
        assert_eq!(event.data["workflow_id"], workflow.as_str(), "only the chosen workflow");
        seen.push((
            event.data["instance_id"].as_str().unwrap().to_owned(),
            event.data["status"].as_str().unwrap().to_owned(),
        ));
    }
    assert_eq!(seen, [(id.clone(), "running".to_owned()), (id, "succeeded".to_owned())]);
}
both_backends!(
    a_finished_instance_replays_its_whole_history_as_spans_then_ends,
    last_event_id_resumes_right_after_it,
    a_live_stream_follows_the_instance_and_ends_after_it_finishes,
    a_queued_instance_records_which_limit_held_it,
    bad_stream_requests_get_problems,
    the_dashboard_feed_sends_counts_then_status_changes
);
