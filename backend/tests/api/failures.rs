//! Failure triage: `GET /api/v1/failures` groups failures by workflow, failing node and error
//! class; a group opens as a filtered list and is retried as one bulk job.

use crate::cleanup::wait_job;
use crate::common::{both_backends, problem, TestApp};
use serde_json::json;
use trellis_model::api::{BulkAnswer, FailureReport, InstancePage, InstanceStats};
use trellis_model::InstanceStatus;

async fn report(app: &TestApp, query: &str) -> FailureReport {
    let answer = app.get(&format!("/api/v1/failures?{query}")).send().await.unwrap();
    assert_eq!(answer.status(), 200, "{query}");
    answer.json().await.unwrap()
}

/// Fails its first attempt with a message naming the input's `ms`, then succeeds.
fn flaky_timeout() -> serde_json::Value {
    json!({"nodes": [
        {"id": "prepare", "type": "noop"},
        {"id": "call", "type": "fail", "config": {"message": "timeout after {{ input.ms }} ms", "fail_attempts": 1}}
    ], "edges": [{"from": "prepare", "to": "call"}]})
}

async fn failures_differing_only_in_numbers_group_and_the_group_is_retried_as_one(app: TestApp) {
    let wf = app.publish(flaky_timeout()).await;
    let other = app.publish(json!({"nodes": [{"id": "boom", "type": "fail"}]})).await;
    let mut ids = Vec::new();
    for ms in [3012, 2990] {
        let id = app.start(&wf, json!({"input": {"ms": ms}})).await;
        assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Failed);
        ids.push(id);
    }
    let lone = app.start(&other, json!({})).await;
    app.wait_finished(&lone).await;

    let all = report(&app, "").await;
    let ours: Vec<_> = all.groups.iter().filter(|g| g.workflow_id == wf || g.workflow_id == other).collect();
    assert_eq!(ours.len(), 2, "{all:?}");
    let group = ours.iter().find(|g| g.workflow_id == wf).unwrap();
    assert_eq!((group.count, group.node.as_deref()), (2, Some("call")));
    assert_eq!(group.error_class, "node `call` failed: timeout after <n> ms");
    assert_eq!(group.sample_instance, ids[1], "the newest instance is the sample");
    assert_eq!(group.sample_error.as_deref(), Some("node `call` failed: timeout after 2990 ms"), "the newest error");
    assert_eq!(group.workflow_name.as_deref(), Some("engine test"));
    assert!(group.first_seen <= group.last_seen);
    let only = report(&app, &format!("workflow={wf}")).await;
    assert_eq!((only.total, only.groups.len()), (2, 1));

    // The group as a list: its node and class are list filters.
    let class = urlencode(&group.error_class);
    let listed: InstancePage = app
        .get(&format!("/api/v1/instances?workflow={wf}&node=call&error_class={class}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    // ... and a bulk retry filter: the whole group runs again, from its failed node.
    let filter = json!({"workflow": wf, "node": "call", "error_class": group.error_class});
    let started = app.post("/api/v1/instances/retry").json(&json!({"filter": filter})).send().await.unwrap();
    assert_eq!(started.status(), 202);
    let answer: BulkAnswer = started.json().await.unwrap();
    assert_eq!(answer.matched, 2);
    let job = wait_job(&app, answer.job_id.as_deref().unwrap()).await;
    assert_eq!((job.status.as_str(), job.processed), ("succeeded", 2), "{job:?}");
    for id in &ids {
        let done = app.wait_finished(id).await;
        assert_eq!(done.summary.status, InstanceStatus::Succeeded);
        assert_eq!(done.nodes.iter().find(|n| n.id == "prepare").unwrap().attempts, 1, "kept its result");
    }
    let after = report(&app, &format!("workflow={wf}")).await;
    assert_eq!((after.total, after.groups.len()), (0, 0), "a retried instance is no longer a failure: {after:?}");
}

async fn a_failure_range_must_make_sense(app: TestApp) {
    let empty = report(&app, "since=2020-01-01T00:00:00Z&until=2020-01-02T00:00:00Z").await;
    assert_eq!((empty.total, empty.groups.len()), (0, 0));
    let backwards =
        app.get("/api/v1/failures?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z").send().await.unwrap();
    assert!(problem(backwards, 400).await["detail"].as_str().unwrap().contains("before"));
    problem(app.get("/api/v1/failures?limit=0").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/failures?since=yesterday").send().await.unwrap(), 400).await;
    problem(app.get("/api/v1/failures?colour=red").send().await.unwrap(), 400).await;
    let viewer = app.token_for("viewer").await;
    let seen = app.client.get(app.url("/api/v1/failures")).bearer_auth(viewer).send().await.unwrap();
    assert_eq!(seen.status(), 200, "viewers read failures");
}
/// A stub on 127.0.0.1 that answers `/{code}` with that status and a body saying why.
async fn failing_service() -> String {
    use axum::extract::Path;
    use axum::http::StatusCode;
    let app = axum::Router::new().route(
        "/{code}",
        axum::routing::get(|Path(code): Path<u16>| async move {
            let body = format!("{{\"error\":\"no such sku bad-037\",\"code\":{code}}}");
            (StatusCode::from_u16(code).unwrap(), body)
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// An `http` node's failure keeps what the service said (the start of its body), and its
/// failure group keeps the status code: 500, 503 and 404 are three troubles, not one.
async fn http_failures_keep_the_body_and_group_by_status_code(app: TestApp) {
    let base = failing_service().await;
    let url = format!("{base}/{{{{ input.code }}}}");
    let wf = app.publish(json!({"nodes": [{"id": "call", "type": "http", "config": {"url": url}}]})).await;
    for code in [404, 500, 503, 500] {
        let id = app.start(&wf, json!({"input": {"code": code}})).await;
        let done = app.wait_finished(&id).await;
        assert_eq!(done.summary.status, InstanceStatus::Failed);
        let error = done.nodes[0].error.clone().unwrap_or_default();
        let reason = if code == 404 { "Not Found" } else { "" };
        assert!(error.starts_with(&format!("HTTP {code} {reason}")), "{error}");
        assert!(error.contains("no such sku bad-037"), "the body is kept: {error}");
    }
    let groups = report(&app, &format!("workflow={wf}")).await.groups;
    let mut classes: Vec<(String, i64)> = groups.iter().map(|g| (g.error_class.clone(), g.count)).collect();
    classes.sort();
    assert_eq!(classes.len(), 3, "{classes:?}");
    assert!(classes[0].0.contains("HTTP 404 Not Found") && classes[0].1 == 1, "{classes:?}");
    assert!(classes[1].0.contains("HTTP 500 Internal Server Error") && classes[1].1 == 2, "{classes:?}");
    assert!(classes[2].0.contains("HTTP 503 Service Unavailable") && classes[2].1 == 1, "{classes:?}");
}

both_backends!(
    http_failures_keep_the_body_and_group_by_status_code,
    failures_differing_only_in_numbers_group_and_the_group_is_retried_as_one,
    a_failure_range_must_make_sense
);

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn stats_count_finished_instances_per_slot_and_rank_durations(app: TestApp) {
    let wf = app.publish(crate::common::chain()).await;
    for _ in 0..3 {
        let id = app.start(&wf, json!({})).await;
        app.wait_finished(&id).await;
    }
    let stats: InstanceStats =
        app.get(&format!("/api/v1/stats/instances?workflow={wf}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(stats.bucket, "minute");
    assert!((60..=61).contains(&stats.slots.len()), "an hour of minutes: {}", stats.slots.len());
    let succeeded: i64 = stats.slots.iter().map(|s| s.counts.get(InstanceStatus::Succeeded)).sum();
    assert_eq!(succeeded, 3);
    assert_eq!(stats.durations.len(), 1);
    let d = &stats.durations[0];
    assert_eq!((d.count, d.workflow_name.as_deref()), (3, Some("engine test")));
    assert!(d.p50_ms > 0.0 && d.p50_ms <= d.p95_ms, "{d:?}");

    // Rows placed at known times land in their slots.
    let other = app.publish(crate::common::chain()).await;
    let base = chrono::DateTime::parse_from_rfc3339("2026-01-01T10:00:00Z").unwrap().with_timezone(&chrono::Utc);
    let at = |s: i64| base + chrono::Duration::seconds(s);
    crate::cleanup::insert_finished(
        &app,
        &other,
        &[("failed", at(5)), ("failed", at(65)), ("canceled", at(70)), ("succeeded", at(179))],
    )
    .await;
    let query =
        format!("/api/v1/stats/instances?workflow={other}&since=2026-01-01T10:00:30Z&until=2026-01-01T10:03:00Z");
    let placed: InstanceStats = app.get(&query).send().await.unwrap().json().await.unwrap();
    assert_eq!(placed.since.to_rfc3339(), "2026-01-01T10:00:00+00:00", "since rounds down to the minute");
    let per_slot: Vec<(i64, i64, i64)> = placed
        .slots
        .iter()
        .map(|s| {
            (
                s.counts.get(InstanceStatus::Failed),
                s.counts.get(InstanceStatus::Canceled),
                s.counts.get(InstanceStatus::Succeeded),
            )
        })
        .collect();
    assert_eq!(per_slot, [(1, 0, 0), (1, 1, 0), (0, 0, 1)]);
    let by_hour: InstanceStats = app.get(&format!("/api/v1/stats/instances?workflow={other}&bucket=hour&since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:00Z"))
        .send().await.unwrap().json().await.unwrap();
    assert_eq!((by_hour.slots.len(), by_hour.slots[10].counts.get(InstanceStatus::Failed)), (24, 2));

    for bad in [
        "bucket=week",
        "since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z",
        "since=2026-01-01T00:00:00Z&until=2026-01-03T00:00:00Z",
    ] {
        let refused = app.get(&format!("/api/v1/stats/instances?{bad}")).send().await.unwrap();
        problem(refused, 400).await;
    }
}
both_backends!(stats_count_finished_instances_per_slot_and_rank_durations);
