//! The engine end to end: every node type, retries, timeouts, limits, cancel and signal.

use crate::common::{both_backends, node, problem, TestApp};
use crate::ledger;
use serde_json::{json, Value};
use trellis_model::api::{InstanceDetail, InstancePage, Started, TaskView};
use trellis_model::{InstanceStatus, NodeStatus};

async fn a_chain_of_transforms_runs_in_order_and_sees_earlier_outputs(app: TestApp) {
    let wf = app
        .publish(json!({
            "nodes": [
                {"id": "double", "type": "transform", "config": {"expression": "{'n': input.n * 2}"}},
                {"id": "inc", "type": "transform", "config": {"expression": "nodes.double.output.n + 1"}}
            ],
            "edges": [{"from": "double", "to": "inc"}]
        }))
        .await;
    let id = app.start(&wf, json!({"input": {"n": 20}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(done.output, Some(json!({"inc": 41})));
    assert_eq!(node(&done, "double").output, Some(json!({"n": 40})));
    assert_eq!(node(&done, "inc").attempts, 1);
    assert!(done.summary.started_at.is_some() && done.summary.ended_at.is_some());
}

async fn a_branch_runs_the_chosen_path_skips_the_other_and_joins(app: TestApp) {
    let wf = app.publish(json!({
        "nodes": [
            {"id": "check", "type": "branch", "config": {"condition": "'big' if input.n > 10 else 'small'", "outcomes": ["big", "small"]}},
            {"id": "big", "type": "noop"}, {"id": "small", "type": "noop"}, {"id": "join", "type": "noop"}
        ],
        "edges": [{"from": "check", "to": "big", "when": "big"}, {"from": "check", "to": "small", "when": "small"},
                  {"from": "big", "to": "join"}, {"from": "small", "to": "join"}]
    })).await;
    let done = app.wait_finished(&app.start(&wf, json!({"input": {"n": 50}})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "big").status, NodeStatus::Succeeded);
    assert_eq!(node(&done, "small").status, NodeStatus::Skipped);
    assert_eq!(node(&done, "small").attempts, 0);
    assert_eq!(node(&done, "join").status, NodeStatus::Succeeded);
}

async fn a_failing_node_is_retried_until_it_succeeds(app: TestApp) {
    let wf = app
        .publish(json!({"nodes": [{"id": "flaky", "type": "fail", "config": {"fail_attempts": 2},
        "retry": {"max_attempts": 3, "backoff_ms": 20, "max_backoff_ms": 50}}]}))
        .await;
    let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "flaky").attempts, 3);
}

async fn retries_run_out_and_the_instance_fails_naming_the_node(app: TestApp) {
    let wf = app
        .publish(json!({"nodes": [{"id": "broken", "type": "fail", "config": {"message": "disk on fire"},
        "retry": {"max_attempts": 2, "backoff_ms": 10, "max_backoff_ms": 10}}, {"id": "after", "type": "noop"}],
        "edges": [{"from": "broken", "to": "after"}]}))
        .await;
    let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let error = done.summary.error.as_deref().unwrap();
    assert!(error.contains("broken") && error.contains("disk on fire"));
    assert_eq!(node(&done, "broken").attempts, 2);
    assert_eq!(node(&done, "broken").error.as_deref(), Some("disk on fire"));
    assert_eq!(node(&done, "after").status, NodeStatus::Canceled);
}

async fn a_failure_edge_handles_the_failure(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "try", "type": "fail"}, {"id": "ok", "type": "noop"}, {"id": "recover", "type": "noop"}],
        "edges": [{"from": "try", "to": "ok"}, {"from": "try", "to": "recover", "when": "failure"}]})).await;
    let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "ok").status, NodeStatus::Skipped);
    assert_eq!(node(&done, "recover").status, NodeStatus::Succeeded);
}

async fn an_expression_that_fails_fails_the_node_with_its_error(app: TestApp) {
    let wf = app
        .publish(json!({"nodes": [{"id": "t", "type": "transform", "config": {"expression": "input.missing.deeper"}}]}))
        .await;
    let done = app.wait_finished(&app.start(&wf, json!({"input": {}})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    assert!(node(&done, "t").error.as_deref().unwrap().contains("expression failed"), "{done:?}");
}

async fn a_delay_waits_on_a_durable_timer(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "wait", "type": "delay", "config": {"duration_ms": 300}}]})).await;
    let id = app.start(&wf, json!({})).await;
    let waiting = app.wait_for(&id, |i| node(i, "wait").status == NodeStatus::Waiting).await;
    assert_eq!(waiting.summary.status, InstanceStatus::Running);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    let started = node(&done, "wait").started_at.unwrap();
    let ended = node(&done, "wait").ended_at.unwrap();
    assert!(ended - started >= chrono::Duration::milliseconds(300), "the delay ended early");
}

async fn a_signal_completes_a_waiting_node_and_only_a_waiting_one(app: TestApp) {
    let wf = app
        .publish(json!({"nodes": [{"id": "approve", "type": "wait_signal"}, {"id": "go", "type": "noop"}],
        "edges": [{"from": "approve", "to": "go"}]}))
        .await;
    let id = app.start(&wf, json!({})).await;
    let not_yet = app.signal(&id, json!({"node": "go", "payload": {}})).await;
    problem(not_yet, 409).await;
    app.wait_for(&id, |i| node(i, "approve").status == NodeStatus::Waiting).await;
    let signaled = app.signal(&id, json!({"node": "approve", "payload": {"by": "ada"}})).await;
    assert_eq!(signaled.status(), 200);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    assert_eq!(node(&done, "approve").output, Some(json!({"by": "ada"})));
    let again = app.signal(&id, json!({"node": "approve"})).await;
    problem(again, 409).await;
    let unknown = app.signal(&id, json!({"node": "nope"})).await;
    problem(unknown, 404).await;
}

async fn node_and_instance_timeouts_end_what_runs_too_long(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "stuck", "type": "wait_signal", "timeout_ms": 200}]})).await;
    let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    assert_eq!(node(&done, "stuck").status, NodeStatus::TimedOut);
    assert!(node(&done, "stuck").error.as_deref().unwrap().contains("timed out"));

    let wf =
        app.publish(json!({"nodes": [{"id": "stuck", "type": "wait_signal"}], "settings": {"timeout_ms": 200}})).await;
    let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::TimedOut);
    assert_eq!(node(&done, "stuck").status, NodeStatus::TimedOut);
}

async fn cancel_stops_a_running_instance_once(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})).await;
    let id = app.start(&wf, json!({})).await;
    let canceled = app.post(&format!("/api/v1/instances/{id}/cancel")).send().await.unwrap();
    assert_eq!(canceled.status(), 200);
    let body: InstanceDetail = canceled.json().await.unwrap();
    assert_eq!(body.summary.status, InstanceStatus::Canceled);
    problem(app.post(&format!("/api/v1/instances/{id}/cancel")).send().await.unwrap(), 409).await;
}

async fn http_nodes_send_templated_requests_with_the_attempt_idempotency_key(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    let wf = app.publish(json!({"nodes": [{"id": "call", "type": "http", "config": {
        "method": "POST", "url": format!("http://{addr}/users/{{{{ input.user }}}}"), "body": {"greeting": "hi {{ input.user }}"}}}]})).await;
    let id = app.start(&wf, json!({"input": {"user": "ada"}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    let output = node(&done, "call").output.as_ref().unwrap();
    assert_eq!(output["status"], 200);
    assert_eq!(output["body"]["echo"], json!({"greeting": "hi ada"}));
    let calls = ledger.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].path, "users/ada");
    assert_eq!(calls[0].body, json!({"greeting": "hi ada"}));
    assert_eq!(calls[0].idempotency_key.as_deref(), Some(format!("{id}:call:1").as_str()));
}

async fn http_server_errors_are_retried_and_client_errors_are_not(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    let retry = json!({"max_attempts": 3, "backoff_ms": 10, "max_backoff_ms": 10});
    let wf = app
        .publish(json!({"nodes": [
        {"id": "five", "type": "http", "config": {"url": format!("http://{addr}/status/503/x")}, "retry": retry},
        {"id": "four", "type": "http", "config": {"url": format!("http://{addr}/status/404/y")}, "retry": retry}]}))
        .await;
    let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed);
    let calls = ledger.calls.lock().unwrap().clone();
    let count = |p: &str| calls.iter().filter(|c| c.path.starts_with(p)).count();
    assert_eq!(count("status/404"), 1, "a 404 is not retried");
    assert!(count("status/503") >= 1);
    let keys: Vec<_> =
        calls.iter().filter(|c| c.path.starts_with("status/503")).map(|c| c.idempotency_key.clone().unwrap()).collect();
    assert!(keys.iter().enumerate().all(|(i, k)| k.ends_with(&format!(":five:{}", i + 1))), "{keys:?}");
}

async fn parallel_nodes_respect_max_parallel_nodes(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    let nodes: Vec<Value> = (0..5)
        .map(|i| json!({"id": format!("n{i}"), "type": "http", "config": {"url": format!("http://{addr}/slow/{i}")}}))
        .collect();
    let wf = app.publish(json!({"nodes": nodes, "settings": {"max_parallel_nodes": 2}})).await;
    let done = app.wait_finished(&app.start(&wf, json!({})).await).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(ledger.calls.lock().unwrap().len(), 5);
    assert_eq!(ledger.max_in_flight.load(std::sync::atomic::Ordering::SeqCst), 2);
}

async fn external_workers_claim_complete_and_cannot_use_stale_leases(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "work", "type": "task", "config": {"queue": "emails", "input": {"to": "{{ input.to }}"}}}]})).await;
    let id = app.start(&wf, json!({"input": {"to": "ada@example.test"}})).await;
    let polled = app
        .post("/api/v1/tasks/poll")
        .json(&json!({"queue": "emails", "worker": "w1", "wait_ms": 5000}))
        .send()
        .await
        .unwrap();
    assert_eq!(polled.status(), 200);
    let task: TaskView = polled.json().await.unwrap();
    assert_eq!(task.input, json!({"to": "ada@example.test"}));
    assert_eq!(task.idempotency_key, format!("{id}:work:1"));
    let task_id = task.id.as_str();
    let empty = app
        .post("/api/v1/tasks/poll")
        .json(&json!({"queue": "emails", "worker": "w2", "wait_ms": 100}))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status(), 204, "a leased task is not handed out twice");

    let stale = app
        .post(&format!("/api/v1/tasks/{task_id}/complete"))
        .json(&json!({"lease_token": "forged", "output": {}}))
        .send()
        .await
        .unwrap();
    problem(stale, 409).await;
    assert_eq!(app.instance(&id).await.summary.status, InstanceStatus::Running, "a stale token changes nothing");
    let beat = app
        .post(&format!("/api/v1/tasks/{task_id}/heartbeat"))
        .json(&json!({"lease_token": task.lease_token}))
        .send()
        .await
        .unwrap();
    assert_eq!(beat.status(), 200);
    let completed = app
        .post(&format!("/api/v1/tasks/{task_id}/complete"))
        .json(&json!({"lease_token": task.lease_token, "output": {"sent": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(completed.status(), 204);
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded);
    assert_eq!(node(&done, "work").output, Some(json!({"sent": true})));
    let twice = app
        .post(&format!("/api/v1/tasks/{task_id}/complete"))
        .json(&json!({"lease_token": task.lease_token, "output": {}}))
        .send()
        .await
        .unwrap();
    problem(twice, 409).await;
}

async fn a_full_workflow_rejects_or_queues_starts_beyond_its_limit(app: TestApp) {
    let hold = json!([{"id": "hold", "type": "wait_signal"}]);
    let reject =
        app.publish(json!({"nodes": hold, "settings": {"max_concurrent_instances": 1, "on_limit": "reject"}})).await;
    app.start(&reject, json!({})).await;
    let refused = app.post(&format!("/api/v1/workflows/{reject}/instances")).json(&json!({})).send().await.unwrap();
    problem(refused, 429).await;

    let queue = app.publish(json!({"nodes": hold, "settings": {"max_concurrent_instances": 1}})).await;
    let first = app.start(&queue, json!({})).await;
    let second = app.post(&format!("/api/v1/workflows/{queue}/instances")).json(&json!({})).send().await.unwrap();
    let second: Started = second.json().await.unwrap();
    assert_eq!(second.status, InstanceStatus::Queued);
    let second = second.id;
    app.wait_for(&first, |i| node(i, "hold").status == NodeStatus::Waiting).await;
    assert_eq!(app.instance(&second).await.summary.status, InstanceStatus::Queued);
    app.post(&format!("/api/v1/instances/{first}/signal")).json(&json!({"node": "hold"})).send().await.unwrap();
    app.wait_for(&second, |i| i.summary.status == InstanceStatus::Running).await;
    let listed: InstancePage =
        app.get(&format!("/api/v1/instances?workflow={queue}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed.counts.get(InstanceStatus::Succeeded), 1);
    assert_eq!(listed.counts.get(InstanceStatus::Running), 1);
    assert_eq!(listed.items[0].id, second);
}

async fn bad_starts_get_clear_errors(app: TestApp) {
    let unpublished = app.create_workflow(json!({"name": "draft only"})).await;
    let id = unpublished.summary.id.as_str();
    problem(app.post(&format!("/api/v1/workflows/{id}/instances")).send().await.unwrap(), 409).await;
    let wf = app.publish(json!({"nodes": [{"id": "a", "type": "noop"}]})).await;
    problem(
        app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"version": 7})).send().await.unwrap(),
        404,
    )
    .await;
    let big = json!({"input": {"blob": "x".repeat(300 * 1024)}});
    problem(app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&big).send().await.unwrap(), 413).await;
    let ghost = uuid::Uuid::now_v7();
    problem(app.post(&format!("/api/v1/workflows/{ghost}/instances")).send().await.unwrap(), 404).await;
    problem(
        app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"inputs": 1})).send().await.unwrap(),
        422,
    )
    .await;
    problem(app.get("/api/v1/instances?status=exploded").send().await.unwrap(), 400).await;
    let listed: InstancePage =
        app.get(&format!("/api/v1/instances?workflow={wf}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed.items.len(), 0, "no instance was half-created");
}
both_backends!(
    a_chain_of_transforms_runs_in_order_and_sees_earlier_outputs,
    a_branch_runs_the_chosen_path_skips_the_other_and_joins,
    a_failing_node_is_retried_until_it_succeeds,
    retries_run_out_and_the_instance_fails_naming_the_node,
    a_failure_edge_handles_the_failure,
    an_expression_that_fails_fails_the_node_with_its_error,
    a_delay_waits_on_a_durable_timer,
    a_signal_completes_a_waiting_node_and_only_a_waiting_one,
    node_and_instance_timeouts_end_what_runs_too_long,
    cancel_stops_a_running_instance_once,
    http_nodes_send_templated_requests_with_the_attempt_idempotency_key,
    http_server_errors_are_retried_and_client_errors_are_not,
    parallel_nodes_respect_max_parallel_nodes,
    external_workers_claim_complete_and_cannot_use_stale_leases,
    a_full_workflow_rejects_or_queues_starts_beyond_its_limit,
    bad_starts_get_clear_errors
);

async fn a_flooded_workflow_does_not_starve_another(app: TestApp) {
    let (addr, ledger) = ledger::start().await;
    let slow = json!({"nodes": [{"id": "s", "type": "http", "config": {"url": format!("http://{addr}/slow/flood")}}]});
    let flood = app.publish(slow).await;
    // 300 instances of 300 ms on 16 workers take over 5 s to drain; started 15 at a time,
    // the flood is in long before that.
    for _ in 0..20 {
        futures_util::future::join_all((0..15).map(|_| app.start(&flood, json!({})))).await;
    }
    let succeeded = || async {
        let list: InstancePage =
            app.get(&format!("/api/v1/instances?workflow={flood}&limit=1")).send().await.unwrap().json().await.unwrap();
        list.counts.0["succeeded"]
    };
    let before = succeeded().await;
    let quick = app
        .publish(json!({"nodes": [{"id": "q", "type": "http", "config": {"url": format!("http://{addr}/quick")}}]}))
        .await;
    let id = app.start(&quick, json!({})).await;
    app.wait_finished(&id).await;
    let overtaken_by = succeeded().await - before;
    // In arrival order the quick instance would wait for every flood instance still waiting.
    let waiting = 300 - before;
    assert!(waiting >= 100, "the flood drained ({before} of 300 done) before the quick start: nothing to starve");
    assert!(overtaken_by < waiting / 2, "the quick workflow waited behind {overtaken_by} of {waiting} flood instances");
    assert!(ledger.calls.lock().unwrap().iter().any(|c| c.path == "quick"));
}
both_backends!(a_flooded_workflow_does_not_starve_another);

async fn a_timed_out_attempt_that_finishes_late_does_not_count(app: TestApp) {
    let wf = app
        .publish(json!({"nodes": [{"id": "job", "type": "task", "timeout_ms": 150, "config": {"queue": "late"},
        "retry": {"max_attempts": 2, "backoff_ms": 400, "max_backoff_ms": 400}}]}))
        .await;
    let id = app.start(&wf, json!({})).await;
    let poll = json!({"queue": "late", "worker": "w", "wait_ms": 5000});
    let first: TaskView = app.post("/api/v1/tasks/poll").json(&poll).send().await.unwrap().json().await.unwrap();
    assert_eq!(first.attempt, 1);
    app.wait_for(&id, |i| node(i, "job").error.as_deref().is_some_and(|e| e.contains("timed out"))).await;
    let late = app
        .post(&format!("/api/v1/tasks/{}/complete", first.id))
        .json(&json!({"lease_token": first.lease_token, "output": "late"}))
        .send()
        .await
        .unwrap();
    problem(late, 409).await;
    let second: TaskView = app.post("/api/v1/tasks/poll").json(&poll).send().await.unwrap().json().await.unwrap();
    assert_eq!(second.attempt, 2);
    let done = app
        .post(&format!("/api/v1/tasks/{}/complete", second.id))
        .json(&json!({"lease_token": second.lease_token, "output": "on time"}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 204);
    let finished = app.wait_finished(&id).await;
    assert_eq!(finished.summary.status, InstanceStatus::Succeeded, "{finished:?}");
    assert_eq!(node(&finished, "job").output, Some(json!("on time")));
    assert_eq!(node(&finished, "job").attempts, 2);
}
both_backends!(a_timed_out_attempt_that_finishes_late_does_not_count);
