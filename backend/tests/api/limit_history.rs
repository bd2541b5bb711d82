//! Concurrency limits as the recorded history proves them: for every limited workflow, the
//! instances' recorded intervals `[started_at, ended_at]` never overlap more than
//! `max_concurrent_instances` deep, nor more than `max_per_key` deep among one key's instances,
//! whether the slots were taken by starts, admissions from the queue or retries. Checked from
//! the times the API answers, as users and auditors read them; touching intervals (one's end
//! equal to another's start) do not overlap.

use crate::common::{both_backends, TestApp};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::HashMap;
use trellis_model::api::InstanceSummary;
use trellis_model::InstanceStatus;

const LIMIT: usize = 2;
/// The keyed workflow's limit in all: less than its two keys' `LIMIT`s together, so both bind.
const KEYED_LIMIT: usize = 3;
const WORKFLOWS: usize = 6;
const STARTS_PER_WORKFLOW: usize = 6;
const ROUNDS: usize = 4;

/// A workflow of one short delay, limited to `LIMIT` instances at once.
fn limited() -> Value {
    json!({
        "nodes": [{"id": "pause", "type": "delay", "config": {"duration_ms": 3}}],
        "settings": {"max_concurrent_instances": LIMIT, "on_limit": "queue"}
    })
}

/// A workflow of one short delay, at most `LIMIT` instances per `input.k`, `KEYED_LIMIT` in all.
fn keyed() -> Value {
    json!({
        "nodes": [{"id": "pause", "type": "delay", "config": {"duration_ms": 3}}],
        "settings": {"concurrency_key": "input.k", "max_per_key": LIMIT, "max_concurrent_instances": KEYED_LIMIT}
    })
}

/// A workflow whose one node fails its first run, limited to `LIMIT`: retrying its failed
/// instances takes slots again.
fn failing_once() -> Value {
    json!({
        "nodes": [{"id": "flaky", "type": "fail", "config": {"fail_attempts": 1}}],
        "settings": {"max_concurrent_instances": LIMIT, "on_limit": "queue"}
    })
}

/// The deepest the intervals overlap at any instant; an end at the very instant of a start
/// is taken first, so touching intervals do not count as overlapping.
fn deepest_overlap(intervals: &[(DateTime<Utc>, DateTime<Utc>)]) -> usize {
    // (time, 0 = an end, 1 = a start): sorting puts ends before starts at equal times.
    let mut moments: Vec<(DateTime<Utc>, u8)> = intervals.iter().flat_map(|&(s, e)| [(s, 1), (e, 0)]).collect();
    moments.sort();
    let (mut depth, mut deepest) = (0usize, 0usize);
    for (_, kind) in moments {
        if kind == 1 {
            depth += 1;
            deepest = deepest.max(depth);
        } else {
            depth -= 1;
        }
    }
    deepest
}

/// Starts `per_workflow` instances of each workflow at once, `input` giving each its input.
async fn start_all(app: &TestApp, workflows: &[String], input: impl Fn(usize) -> Value) -> Vec<String> {
    let mut requests = Vec::new();
    for wf in workflows {
        for n in 0..STARTS_PER_WORKFLOW {
            requests.push(app.post(&format!("/api/v1/workflows/{wf}/instances")).json(&json!({"input": input(n)})));
        }
    }
    let starts = requests.into_iter().map(|request| async move {
        let response = request.send().await.unwrap();
        assert!(response.status().is_success(), "start refused: {}", response.text().await.unwrap());
        response.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
    });
    crate::drafts::futures_join_all(starts).await
}

/// Each instance once ended, with its input's `k` (if any).
async fn ended(app: &TestApp, ids: &[String]) -> Vec<(InstanceSummary, Option<Value>)> {
    let mut all = Vec::with_capacity(ids.len());
    for id in ids {
        let detail = app.wait_finished(id).await;
        let key = detail.input.get("k").cloned();
        all.push((detail.summary, key));
    }
    all
}

/// Fails with the offending intervals if any workflow's recorded intervals overlap deeper than
/// its limit (`KEYED_LIMIT` for keyed ones, else `LIMIT`), or any key's deeper than `LIMIT`.
fn assert_within_limits(round: usize, instances: &[(InstanceSummary, Option<Value>)]) {
    type Intervals = Vec<(DateTime<Utc>, DateTime<Utc>)>;
    let mut groups: HashMap<(String, Option<String>), (usize, Intervals)> = HashMap::new();
    for (summary, key) in instances {
        let interval = (summary.started_at.expect("started"), summary.ended_at.expect("ended"));
        assert!(interval.0 <= interval.1, "{} ends before it starts: {interval:?}", summary.id);
        let workflow_limit = if key.is_some() { KEYED_LIMIT } else { LIMIT };
        let workflow = groups.entry((summary.workflow_id.clone(), None)).or_insert((workflow_limit, Vec::new()));
        workflow.1.push(interval);
        if let Some(key) = key {
            let by_key = groups.entry((summary.workflow_id.clone(), Some(key.to_string())));
            by_key.or_insert((LIMIT, Vec::new())).1.push(interval);
        }
    }
    for ((workflow, key), (limit, mut intervals)) in groups {
        let deepest = deepest_overlap(&intervals);
        intervals.sort();
        assert!(
            deepest <= limit,
            "round {round}: workflow {workflow} (key {key:?}) recorded {deepest} instances running at once, \
             the limit is {limit}: {intervals:#?}"
        );
    }
}

async fn recorded_times_never_overlap_beyond_the_concurrency_limits(app: TestApp) {
    // The overlap checker itself: touching is not overlapping, three at one instant is three.
    let at = |ms: i64| DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::milliseconds(ms);
    assert_eq!(deepest_overlap(&[(at(0), at(5)), (at(5), at(9)), (at(0), at(9))]), 2);
    assert_eq!(deepest_overlap(&[(at(0), at(5)), (at(4), at(9)), (at(1), at(6))]), 3);

    let mut limited_ids = Vec::new();
    for _ in 0..WORKFLOWS {
        limited_ids.push(app.publish(limited()).await);
    }
    let mut keyed_ids = Vec::new();
    for _ in 0..WORKFLOWS / 2 {
        keyed_ids.push(app.publish(keyed()).await);
    }
    for round in 0..ROUNDS {
        let plain = start_all(&app, &limited_ids, |n| json!({"n": n})).await;
        let by_key = start_all(&app, &keyed_ids, |n| json!({"k": if n % 2 == 0 { "a" } else { "b" }})).await;
        let all = [plain, by_key].concat();
        assert_within_limits(round, &ended(&app, &all).await);
    }

    // Retries take slots too: every failed instance retried at once, some from the queue.
    let failing = app.publish(failing_once()).await;
    let failed = start_all(&app, std::slice::from_ref(&failing), |n| json!({"n": n})).await;
    for (summary, _) in ended(&app, &failed).await {
        assert_eq!(summary.status, InstanceStatus::Failed);
    }
    let retries = failed.iter().map(|id| {
        let request = app.post(&format!("/api/v1/instances/{id}/retry")).json(&json!({"from": "failed"}));
        async move { assert!(request.send().await.unwrap().status().is_success(), "retry refused") }
    });
    crate::drafts::futures_join_all(retries).await;
    let retried = ended(&app, &failed).await;
    assert!(retried.iter().all(|(s, _)| s.status == InstanceStatus::Succeeded), "every retry succeeds");
    assert_within_limits(ROUNDS, &retried);
}
both_backends!(recorded_times_never_overlap_beyond_the_concurrency_limits);
