//! Purging one instance, bulk purge and cancel jobs, and the queue inspector.

use crate::common::{both_backends, problem, TestApp};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use trellis_model::api::{BulkAnswer, InstancePage, Job, Page, QueueHold, QueuePlace, Started, StatusCounts};
use trellis_model::{InstanceStatus, JobStatus, NodeStatus};

/// Finished instances of `workflow` (version 1), inserted straight into the database: far
/// faster than running them, for tests about many instances.
pub async fn insert_finished(app: &TestApp, workflow: &str, rows: &[(&str, DateTime<Utc>)]) {
    let workflow: uuid::Uuid = workflow.parse().unwrap();
    macro_rules! insert {
        ($pool:expr, $db:ty) => {{
            let pool = $pool;
            for chunk in rows.chunks(1_000) {
                let mut insert = sqlx::QueryBuilder::<$db>::new(
                    "INSERT INTO instances (id, workflow_id, version, status, input, created_at, started_at, ended_at) ",
                );
                insert.push_values(chunk, |mut v, (status, ended)| {
                    v.push_bind(uuid::Uuid::now_v7()).push_bind(workflow).push_bind(1i64).push_bind(status.to_string())
                        .push_bind(sqlx::types::Json(Value::Null)).push_bind(*ended).push_bind(*ended).push_bind(*ended);
                });
                insert.build().execute(&pool).await.unwrap();
            }
        }};
    }
    if app.database_url.starts_with("sqlite") {
        insert!(sqlx::SqlitePool::connect(&app.database_url).await.unwrap(), sqlx::Sqlite);
    } else {
        let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
        insert!(pool.clone(), sqlx::Postgres);
        // What autovacuum does after a bulk load: without statistics the planner thinks the
        // table is empty and sorts every match of a batch instead of walking the primary key.
        sqlx::query("ANALYZE instances").execute(&pool).await.unwrap();
    }
}

pub async fn counts(app: &TestApp, workflow: &str) -> StatusCounts {
    let list = app.get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).send().await.unwrap();
    assert_eq!(list.status(), 200);
    list.json::<InstancePage>().await.unwrap().counts
}

/// Counts written as the JSON the server sends, e.g. `{"queued": 0, ...}`.
pub fn counts_of(literal: Value) -> StatusCounts {
    serde_json::from_value(literal).unwrap()
}

/// Polls a job until it has ended (at most 60 s), returning it.
pub async fn wait_job(app: &TestApp, id: &str) -> Job {
    for _ in 0..3_000 {
        let job: Job = app.get(&format!("/api/v1/jobs/{id}")).send().await.unwrap().json().await.unwrap();
        if !["queued", "running"].contains(&job.status.as_str()) {
            return job;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("job {id} never ended");
}

async fn start_job(app: &TestApp, action: &str, body: Value) -> (BulkAnswer, Job) {
    let response = app.post(&format!("/api/v1/instances/{action}")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 202);
    let answer: BulkAnswer = response.json().await.unwrap();
    let job = wait_job(app, answer.job_id.as_deref().unwrap()).await;
    (answer, job)
}

/// Where instance `id` waits, from the queue inspector.
async fn queue_place(app: &TestApp, id: &str) -> QueuePlace {
    app.get(&format!("/api/v1/instances/{id}/queue")).send().await.unwrap().json().await.unwrap()
}

/// `limit` at 1 with its one slot taken.
fn hold_of(limit: &str) -> QueueHold {
    QueueHold { limit: limit.to_owned(), value: Some(1), running: 1, ..QueueHold::default() }
}

fn hold() -> Value {
    json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})
}

async fn purging_a_finished_instance_removes_it_with_its_history(app: TestApp) {
    let wf = app.publish(crate::common::chain()).await;
    let start = |key: &'static str| {
        app.post(&format!("/api/v1/workflows/{wf}/instances")).header("Idempotency-Key", key).json(&json!({})).send()
    };
    let first: Started = start("order-1").await.unwrap().json().await.unwrap();
    let id = first.id.clone();
    app.wait_finished(&id).await;
    let purged = app.as_admin(app.client.delete(app.url(&format!("/api/v1/instances/{id}")))).send().await.unwrap();
    assert_eq!(purged.status(), 204);
    problem(app.get(&format!("/api/v1/instances/{id}")).send().await.unwrap(), 404).await;
    let store = app.store().await;
    assert!(store.events_after(id.parse().unwrap(), 0, 10).await.unwrap().is_empty(), "history is gone");
    // Its Idempotency-Key record went with it: the same key starts a new instance.
    let again: Started = start("order-1").await.unwrap().json().await.unwrap();
    assert_ne!(again.id, first.id);
    let twice = app.as_admin(app.client.delete(app.url(&format!("/api/v1/instances/{id}")))).send().await.unwrap();
    problem(twice, 404).await;
}

async fn purging_an_unfinished_instance_is_a_conflict_that_says_to_cancel(app: TestApp) {
    let wf = app.publish(hold()).await;
    let id = app.start(&wf, json!({})).await;
    let viewer = app.token_for("viewer").await;
    let denied =
        app.client.delete(app.url(&format!("/api/v1/instances/{id}"))).bearer_auth(viewer).send().await.unwrap();
    problem(denied, 403).await;
    let refused = app.as_admin(app.client.delete(app.url(&format!("/api/v1/instances/{id}")))).send().await.unwrap();
    let body = problem(refused, 409).await;
    assert!(body["detail"].as_str().unwrap().contains("cancel"), "{body}");
    assert_eq!(app.instance(&id).await.summary.status, InstanceStatus::Running);
    let unknown = uuid::Uuid::now_v7();
    problem(
        app.as_admin(app.client.delete(app.url(&format!("/api/v1/instances/{unknown}")))).send().await.unwrap(),
        404,
    )
    .await;
    problem(app.as_admin(app.client.delete(app.url("/api/v1/instances/not-a-uuid"))).send().await.unwrap(), 400).await;
}

async fn a_dry_run_counts_and_changes_nothing_then_a_purge_job_deletes_only_finished_ones(app: TestApp) {
    let done_wf = app.publish(crate::common::chain()).await;
    let mut finished = Vec::new();
    for _ in 0..4 {
        finished.push(app.start(&done_wf, json!({})).await);
    }
    for id in &finished {
        app.wait_finished(id).await;
    }
    let filter = json!({"workflow": done_wf});
    let dry =
        app.post("/api/v1/instances/purge").json(&json!({"filter": filter, "dry_run": true})).send().await.unwrap();
    assert_eq!(dry.status(), 200);
    let dry: BulkAnswer = dry.json().await.unwrap();
    assert_eq!((dry.matched, dry.by_status.get(InstanceStatus::Succeeded)), (4, 4), "{dry:?}");
    assert_eq!(dry.sample.as_ref().unwrap().len(), 4);
    assert_eq!(counts(&app, &done_wf).await.get(InstanceStatus::Succeeded), 4, "a dry run changes nothing");

    // Unfinished instances of another workflow are untouched by a filter-less purge.
    let hold_wf = app.publish(hold()).await;
    let waiting = app.start(&hold_wf, json!({})).await;
    let (answer, job) = start_job(&app, "purge", json!({"filter": {}, "all": true})).await;
    assert_eq!((answer.matched, answer.skipped), (4, 1), "{answer:?}");
    assert_eq!(job.status, JobStatus::Succeeded, "{job:?}");
    assert_eq!((job.processed, job.failed, job.kind.as_str()), (4, 0, "purge"));
    assert_eq!(counts(&app, &done_wf).await.get(InstanceStatus::Succeeded), 0);
    assert_eq!(app.instance(&waiting).await.summary.status, InstanceStatus::Running);
    let jobs: Page<Job> = app.get("/api/v1/jobs").send().await.unwrap().json().await.unwrap();
    assert_eq!(Some(&jobs.items[0].id), answer.job_id.as_ref());
}

async fn a_bulk_action_with_an_empty_filter_is_refused_unless_it_says_all(app: TestApp) {
    let wf = app.publish(crate::common::chain()).await;
    let id = app.start(&wf, json!({})).await;
    app.wait_finished(&id).await;
    for action in ["purge", "cancel", "retry"] {
        for body in [json!({}), json!({"filter": {}}), json!({"filter": {}, "all": false}), json!({"dry_run": false})] {
            let refused = app.post(&format!("/api/v1/instances/{action}")).json(&body).send().await.unwrap();
            let problem = problem(refused, 422).await;
            assert_eq!(problem["errors"][0]["code"], "empty_filter", "{action} {body}: {problem}");
            assert!(problem["detail"].as_str().unwrap().contains("\"all\": true"), "{problem}");
        }
        // `[]` would deserialize to an empty request: refused as not an object.
        let array = app.post(&format!("/api/v1/instances/{action}")).json(&json!([])).send().await.unwrap();
        problem(array, 422).await;
    }
    let dry = app
        .post("/api/v1/instances/purge")
        .json(&json!({"filter": {}, "all": true, "dry_run": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(dry.status(), 200);
    assert_eq!(dry.json::<BulkAnswer>().await.unwrap().matched, 1);
    let jobs: Page<Job> = app.get("/api/v1/jobs").send().await.unwrap().json().await.unwrap();
    assert_eq!(jobs.items.len(), 0, "no refused request started a job");
    assert_eq!(app.instance(&id).await.summary.status, InstanceStatus::Succeeded);
}

async fn bulk_requests_with_bad_filters_say_what_to_fix(app: TestApp) {
    let unknown =
        app.post("/api/v1/instances/purge").json(&json!({"filter": {"status": "done"}})).send().await.unwrap();
    let body = problem(unknown, 422).await;
    assert_eq!(body["errors"][0]["path"], "filter.status", "{body}");
    problem(app.post("/api/v1/instances/purge").json(&json!({"filter": {"colour": "red"}})).send().await.unwrap(), 422)
        .await;
    problem(
        app.post("/api/v1/instances/purge").json(&json!({"filter": {"workflow": "nope"}})).send().await.unwrap(),
        422,
    )
    .await;
    let wrong =
        app.post("/api/v1/instances/purge").json(&json!({"filter": {"status": "running"}})).send().await.unwrap();
    assert!(problem(wrong, 409).await["detail"].as_str().unwrap().contains("cancel them first"));
    problem(
        app.post("/api/v1/instances/cancel").json(&json!({"filter": {"status": "failed"}})).send().await.unwrap(),
        409,
    )
    .await;
    // A filter matching nothing is a job that finishes having done nothing.
    let nobody = uuid::Uuid::now_v7();
    let (answer, job) = start_job(&app, "purge", json!({"filter": {"workflow": nobody}})).await;
    assert_eq!(answer.matched, 0);
    assert_eq!((job.status.as_str(), job.processed), ("succeeded", 0));
    problem(app.get(&format!("/api/v1/jobs/{nobody}")).send().await.unwrap(), 404).await;
}

async fn a_bulk_cancel_cancels_each_unfinished_instance_through_the_engine(app: TestApp) {
    let wf = app.publish(hold()).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(app.start(&wf, json!({})).await);
    }
    let (answer, job) = start_job(&app, "cancel", json!({"filter": {"workflow": wf, "status": "running"}})).await;
    assert_eq!(answer.matched, 3);
    assert_eq!((job.status.as_str(), job.processed), ("succeeded", 3), "{job:?}");
    let store = app.store().await;
    for id in &ids {
        assert_eq!(app.instance(id).await.summary.status, InstanceStatus::Canceled);
        let history = store.events_after(id.parse().unwrap(), 0, 100).await.unwrap();
        assert!(
            history
                .iter()
                .any(|e| e.kind == trellis_model::trace::EventKind::Instance && e.data.0["status"] == "canceled"),
            "{history:?}"
        );
    }
}

async fn a_bulk_retry_reruns_each_failed_instance(app: TestApp) {
    // Fails its first attempt and has no retry policy: the instance fails; a retry succeeds.
    let (wf, ids) = app.failed_once_instances(3).await;
    problem(
        app.post("/api/v1/instances/retry").json(&json!({"filter": {"status": "running"}})).send().await.unwrap(),
        409,
    )
    .await;
    let (answer, job) = start_job(&app, "retry", json!({"filter": {"workflow": wf}})).await;
    assert_eq!(answer.matched, 3);
    assert_eq!((job.status.as_str(), job.processed), ("succeeded", 3), "{job:?}");
    for id in &ids {
        let instance = app.wait_finished(id).await;
        assert_eq!((instance.summary.status, instance.nodes[0].attempts), (InstanceStatus::Succeeded, 2));
    }
}

async fn a_purge_job_works_through_a_hundred_thousand_instances_in_batches(app: TestApp) {
    let wf = app.publish(crate::common::chain()).await;
    let ended = Utc::now();
    let rows: Vec<(&str, DateTime<Utc>)> =
        (0..100_000).map(|i| (if i % 2 == 0 { "succeeded" } else { "failed" }, ended)).collect();
    insert_finished(&app, &wf, &rows).await;
    let dry = app
        .post("/api/v1/instances/purge")
        .json(&json!({"filter": {"workflow": wf}, "dry_run": true}))
        .send()
        .await
        .unwrap();
    let dry: BulkAnswer = dry.json().await.unwrap();
    assert_eq!((dry.matched, dry.sample.as_ref().unwrap().len()), (100_000, 10), "a sample, not every id");
    let (answer, job) = start_job(&app, "purge", json!({"filter": {"workflow": wf}})).await;
    assert_eq!(answer.matched, 100_000);
    assert_eq!((job.status.as_str(), job.processed), ("succeeded", 100_000), "{job:?}");
    let none =
        json!({"queued": 0, "running": 0, "paused": 0, "succeeded": 0, "failed": 0, "canceled": 0, "timed_out": 0});
    assert_eq!(counts(&app, &wf).await, counts_of(none));
}

async fn the_queue_inspector_names_the_limit_and_the_place_in_line(app: TestApp) {
    let wf = app
        .publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}],
        "settings": {"max_concurrent_instances": 1, "on_limit": "queue"}}))
        .await;
    let first = app.start(&wf, json!({})).await;
    let second = app.start(&wf, json!({})).await;
    let third = app.start(&wf, json!({})).await;
    let q = queue_place(&app, &third).await;
    assert_eq!(q.held_by, Some(hold_of("max_concurrent_instances")), "{q:?}");
    assert_eq!((q.position, q.ahead), (Some(2), Some(1)));
    assert_eq!(queue_place(&app, &second).await.position, Some(1));
    let q = queue_place(&app, &first).await;
    assert_eq!((q.status, q.held_by.clone(), q.nodes.clone()), (InstanceStatus::Running, None, Some(vec![])), "{q:?}");
    problem(app.get(&format!("/api/v1/instances/{}/queue", uuid::Uuid::now_v7())).send().await.unwrap(), 404).await;
}

async fn the_queue_inspector_lists_ready_nodes_held_by_max_parallel_nodes(app: TestApp) {
    // A server that accepts and never answers keeps an `http` node running.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let call =
        |id: &str| json!({"id": id, "type": "http", "config": {"method": "GET", "url": format!("http://{addr}/{id}")}});
    let wf =
        app.publish(json!({"nodes": [call("a"), call("b"), call("c")], "settings": {"max_parallel_nodes": 1}})).await;
    let id = app.start(&wf, json!({})).await;
    app.wait_for(&id, |i| i.nodes.iter().any(|n| n.status == NodeStatus::Running)).await;
    let q = queue_place(&app, &id).await;
    assert_eq!(q.held_by, Some(hold_of("max_parallel_nodes")), "{q:?}");
    let nodes = q.nodes.as_ref().unwrap();
    assert_eq!(nodes.iter().map(|n| n.position).collect::<Vec<_>>(), [1, 2], "{q:?}");
    assert_eq!(app.post(&format!("/api/v1/instances/{id}/cancel")).send().await.unwrap().status(), 200);
}

async fn a_job_left_by_a_dead_process_is_taken_over_where_it_stopped(app: TestApp) {
    let wf = app.publish(crate::common::chain()).await;
    insert_finished(&app, &wf, &vec![("succeeded", Utc::now()); 1_200]).await;
    let store = app.store().await;
    let filter = trellis_model::api::InstanceFilter { workflow: Some(wf.clone()), ..Default::default() };
    let all = store
        .matching_ids(
            &trellis::store::InstanceQuery::from_filter(&filter).unwrap(),
            trellis::store::StatusSet::Terminal,
            None,
            None,
            uuid::Uuid::now_v7(),
            2_000,
        )
        .await
        .unwrap();
    assert_eq!(all.len(), 1_200);
    // A process claimed the job, recorded its first 500 and died: its lease has expired.
    let mut job = trellis::jobs::new_job(trellis::jobs::JobKind::Purge, &filter, 1_200, "test");
    job.status = JobStatus::Running;
    job.last_id = Some(all[499]);
    job.processed = 500;
    job.lease_owner = Some("dead-process".into());
    job.lease_expires_at = Some(Utc::now() - chrono::Duration::seconds(1));
    store.insert_job(&job).await.unwrap();
    let done = wait_job(&app, &job.id.to_string()).await;
    assert_eq!((done.status.as_str(), done.processed), ("succeeded", 1_200), "{done:?}");
    // The dead process, were it only slow, could record nothing more: its lease is gone.
    let stale = trellis::store::JobLease { job: job.id, owner: "dead-process".into(), until: Utc::now() };
    assert!(
        !store.purge_batch(&stale, &all[..10], &Default::default()).await.unwrap(),
        "a stale lease records nothing"
    );
    // What the dead process "did" was left alone: the rest went.
    assert_eq!(counts(&app, &wf).await.get(InstanceStatus::Succeeded), 500);
    let left = store
        .matching_ids(
            &trellis::store::InstanceQuery::from_filter(&filter).unwrap(),
            trellis::store::StatusSet::Terminal,
            None,
            None,
            uuid::Uuid::now_v7(),
            2_000,
        )
        .await
        .unwrap();
    assert_eq!(left, all[..500].to_vec());
}

async fn canceling_a_job_stops_it_and_a_finished_job_cannot_be_canceled(app: TestApp) {
    let (answer, job) = start_job(&app, "purge", json!({"filter": {}, "all": true})).await;
    assert_eq!(job.status, JobStatus::Succeeded);
    let id = answer.job_id.as_deref().unwrap();
    problem(app.post(&format!("/api/v1/jobs/{id}/cancel")).send().await.unwrap(), 409).await;
    problem(app.post(&format!("/api/v1/jobs/{}/cancel", uuid::Uuid::now_v7())).send().await.unwrap(), 404).await;
    // A queued job canceled before any process ran it does nothing.
    let wf = app.publish(crate::common::chain()).await;
    insert_finished(&app, &wf, &[("failed", Utc::now())]).await;
    let store = app.store().await;
    let filter = trellis_model::api::InstanceFilter { workflow: Some(wf.clone()), ..Default::default() };
    let mut queued = trellis::jobs::new_job(trellis::jobs::JobKind::Purge, &filter, 1, "test");
    queued.lease_owner = Some("elsewhere".into());
    queued.lease_expires_at = Some(Utc::now() + chrono::Duration::hours(1));
    store.insert_job(&queued).await.unwrap();
    let canceled = app.post(&format!("/api/v1/jobs/{}/cancel", queued.id)).send().await.unwrap();
    assert_eq!(canceled.status(), 200);
    assert_eq!(canceled.json::<Job>().await.unwrap().status, JobStatus::Canceled);
    let lease = trellis::store::JobLease { job: queued.id, owner: "elsewhere".into(), until: Utc::now() };
    let ids = store
        .matching_ids(
            &trellis::store::InstanceQuery::from_filter(&filter).unwrap(),
            trellis::store::StatusSet::Terminal,
            None,
            None,
            uuid::Uuid::now_v7(),
            10,
        )
        .await
        .unwrap();
    assert!(!store.purge_batch(&lease, &ids, &Default::default()).await.unwrap());
    assert_eq!(counts(&app, &wf).await.get(InstanceStatus::Failed), 1);
}
both_backends!(
    purging_a_finished_instance_removes_it_with_its_history,
    purging_an_unfinished_instance_is_a_conflict_that_says_to_cancel,
    a_dry_run_counts_and_changes_nothing_then_a_purge_job_deletes_only_finished_ones,
    a_bulk_action_with_an_empty_filter_is_refused_unless_it_says_all,
    bulk_requests_with_bad_filters_say_what_to_fix,
    a_bulk_cancel_cancels_each_unfinished_instance_through_the_engine,
    a_bulk_retry_reruns_each_failed_instance,
    a_purge_job_works_through_a_hundred_thousand_instances_in_batches,
    the_queue_inspector_names_the_limit_and_the_place_in_line,
    the_queue_inspector_lists_ready_nodes_held_by_max_parallel_nodes,
    a_job_left_by_a_dead_process_is_taken_over_where_it_stopped,
    canceling_a_job_stops_it_and_a_finished_job_cannot_be_canceled
);
