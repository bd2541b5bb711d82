//! Retention policies and the sweeper that applies them.

use crate::cleanup::{counts, counts_of, insert_finished};
use crate::common::{both_backends, problem, Backend, TestApp};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};
use trellis_model::api::RetentionPreview;
use trellis_model::InstanceStatus;

async fn retention_policies_are_validated_and_admin_only(app: TestApp) {
    let empty: Value = app.get("/api/v1/retention").send().await.unwrap().json().await.unwrap();
    assert_eq!(empty["succeeded_days"], Value::Null, "keep forever until a policy is set");
    let bad = app.put("/api/v1/retention").json(&json!({"succeeded_days": 0, "failed_days": -3})).send().await.unwrap();
    let body = problem(bad, 422).await;
    let paths: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["succeeded_days", "failed_days"], "{body}");
    problem(app.put("/api/v1/retention").json(&json!({"succeeded": 7})).send().await.unwrap(), 422).await;
    problem(app.put("/api/v1/retention").json(&json!({"succeeded_days": "7"})).send().await.unwrap(), 422).await;
    let operator = app.token_for("operator").await;
    let denied =
        app.client.put(app.url("/api/v1/retention")).bearer_auth(operator).json(&json!({})).send().await.unwrap();
    problem(denied, 403).await;

    let set = app.put("/api/v1/retention").json(&json!({"succeeded_days": 7, "failed_days": 30})).send().await.unwrap();
    assert_eq!(set.status(), 200);
    let wf = app.publish(crate::common::chain()).await;
    let inherited: Value =
        app.get(&format!("/api/v1/workflows/{wf}/retention")).send().await.unwrap().json().await.unwrap();
    assert_eq!((inherited["inherited"].clone(), inherited["succeeded_days"].clone()), (json!(true), json!(7)));
    let own =
        app.put(&format!("/api/v1/workflows/{wf}/retention")).json(&json!({"canceled_days": 1})).send().await.unwrap();
    assert_eq!(own.status(), 200);
    let own: Value = app.get(&format!("/api/v1/workflows/{wf}/retention")).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        (own["inherited"].clone(), own["succeeded_days"].clone(), own["canceled_days"].clone()),
        (json!(false), Value::Null, json!(1))
    );
    let missing = uuid::Uuid::now_v7();
    problem(app.put(&format!("/api/v1/workflows/{missing}/retention")).json(&json!({})).send().await.unwrap(), 404)
        .await;
}
both_backends!(retention_policies_are_validated_and_admin_only);

/// 100,000 finished instances; the sweeper deletes exactly the expired ones in bounded batches,
/// and the list keeps answering while it works: it is seen mid-sweep, not only before and after.
async fn the_sweeper_deletes_exactly_the_expired_instances(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.retention_sweep_secs = 1).await;
    let (a, b) = (app.publish(crate::common::chain()).await, app.publish(crate::common::chain()).await);
    let now = Utc::now();
    let ago = |days: i64| now - Duration::days(days);
    let mut rows_a: Vec<(&str, DateTime<Utc>)> = Vec::new();
    rows_a.extend(std::iter::repeat_n(("succeeded", ago(10)), 40_000)); // expired (7 days)
    rows_a.extend(std::iter::repeat_n(("succeeded", ago(1)), 20_000)); // too young
    rows_a.extend(std::iter::repeat_n(("failed", ago(10)), 20_000)); // too young (30 days)
    rows_a.extend(std::iter::repeat_n(("canceled", ago(40)), 10_000)); // expired
    insert_finished(&app, &a, &rows_a).await;
    let mut rows_b: Vec<(&str, DateTime<Utc>)> = Vec::new();
    rows_b.extend(std::iter::repeat_n(("succeeded", ago(10)), 5_000)); // kept: b's own policy keeps them forever
    rows_b.extend(std::iter::repeat_n(("failed", ago(2)), 5_000)); // expired under b's policy (1 day)
    insert_finished(&app, &b, &rows_b).await;

    // Previewed before it is saved: once saved, the sweeper (every second) starts on it.
    let own_preview: RetentionPreview = app
        .post(&format!("/api/v1/workflows/{b}/retention/preview"))
        .json(&json!({"failed_days": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(own_preview.instances, 5_000);
    let own =
        app.put(&format!("/api/v1/workflows/{b}/retention")).json(&json!({"failed_days": 1})).send().await.unwrap();
    assert_eq!(own.status(), 200);
    let before_a = counts(&app, &a).await;
    let default = json!({"succeeded_days": 7, "failed_days": 30, "canceled_days": 30, "timed_out_days": 30});
    // Before saving, the previews count exactly what the sweep then deletes below.
    let preview: RetentionPreview =
        app.post("/api/v1/retention/preview").json(&default).send().await.unwrap().json().await.unwrap();
    assert_eq!((preview.instances, preview.history_entries, preview.scope.as_str()), (50_000, 0, "default"));
    assert_eq!(
        (preview.by_status.get(InstanceStatus::Succeeded), preview.by_status.get(InstanceStatus::Canceled)),
        (40_000, 10_000)
    );
    assert_eq!(preview.by_workflow.len(), 1, "b has a policy of its own: {preview:?}");
    assert_eq!((preview.by_workflow[0].workflow_id.as_str(), preview.by_workflow[0].count), (a.as_str(), 50_000));
    problem(app.post("/api/v1/retention/preview").json(&json!({"failed_days": 0})).send().await.unwrap(), 422).await;
    assert_eq!(counts(&app, &a).await, before_a, "a preview deletes nothing");
    assert_eq!(app.put("/api/v1/retention").json(&default).send().await.unwrap().status(), 200);

    let expected_a = counts_of(
        json!({"queued": 0, "running": 0, "paused": 0, "succeeded": 20_000, "failed": 20_000, "canceled": 0, "timed_out": 0}),
    );
    let expected_b = counts_of(
        json!({"queued": 0, "running": 0, "paused": 0, "succeeded": 5_000, "failed": 0, "canceled": 0, "timed_out": 0}),
    );
    let mut seen = Default::default();
    let mut seen_mid_sweep = false;
    for _ in 0..6_000 {
        // `counts` asserts each list request succeeds, sweep or not.
        seen = (counts(&app, &a).await, counts(&app, &b).await);
        seen_mid_sweep |= seen.0 != before_a && seen.0 != expected_a;
        if seen == (expected_a.clone(), expected_b.clone()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(seen, (expected_a.clone(), expected_b.clone()));
    assert!(seen_mid_sweep, "the list never answered between two sweep batches");
    // Another round deletes nothing more.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert_eq!((counts(&app, &a).await, counts(&app, &b).await), (expected_a, expected_b));
}

mod the_sweeper_deletes_exactly_the_expired_ones {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        the_sweeper_deletes_exactly_the_expired_instances(Backend::Sqlite).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        the_sweeper_deletes_exactly_the_expired_instances(Backend::Postgres).await
    }
}

/// Inserts `count` audit rows by `actor` at `at`, as if written long ago.
async fn insert_audit(app: &TestApp, actor: &str, at: DateTime<Utc>, count: usize) {
    macro_rules! insert {
        ($pool:expr, $db:ty) => {{
            let pool = $pool;
            let rows: Vec<usize> = (0..count).collect();
            for chunk in rows.chunks(500) {
                let mut insert =
                    sqlx::QueryBuilder::<$db>::new("INSERT INTO audit_log (id, at, actor_name, action, status) ");
                insert.push_values(chunk, |mut v, _| {
                    v.push_bind(uuid::Uuid::now_v7())
                        .push_bind(at)
                        .push_bind(actor.to_owned())
                        .push_bind("POST /api/v1/workflows".to_owned())
                        .push_bind(201i32);
                });
                insert.build().execute(&pool).await.unwrap();
            }
        }};
    }
    if app.database_url.starts_with("sqlite") {
        insert!(sqlx::SqlitePool::connect(&app.database_url).await.unwrap(), sqlx::Sqlite);
    } else {
        insert!(sqlx::PgPool::connect(&app.database_url).await.unwrap(), sqlx::Postgres);
    }
}

async fn audit_rows_of(app: &TestApp, actor: &str) -> usize {
    let page: Value =
        app.get(&format!("/api/v1/audit?limit=500&actor={actor}")).send().await.unwrap().json().await.unwrap();
    page["items"].as_array().map_or(0, Vec::len)
}

/// The default policy's `audit_days` bounds the audit log: older rows go in batches, newer
/// ones stay; a workflow's policy cannot set it.
async fn the_sweeper_deletes_audit_rows_older_than_audit_days(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.retention_sweep_secs = 1).await;
    let now = Utc::now();
    insert_audit(&app, "old-actor", now - Duration::days(40), 1_200).await;
    insert_audit(&app, "recent-actor", now - Duration::days(20), 3).await;
    let wf = app.publish(crate::common::chain()).await;

    let per_workflow =
        app.put(&format!("/api/v1/workflows/{wf}/retention")).json(&json!({"audit_days": 30})).send().await.unwrap();
    let body = problem(per_workflow, 422).await;
    assert_eq!(body["errors"][0]["path"], "audit_days", "{body}");
    problem(app.put("/api/v1/retention").json(&json!({"audit_days": 0})).send().await.unwrap(), 422).await;
    let set = app.put("/api/v1/retention").json(&json!({"audit_days": 30})).send().await.unwrap();
    assert_eq!(set.status(), 200);
    let shown: Value = app.get("/api/v1/retention").send().await.unwrap().json().await.unwrap();
    assert_eq!(shown["audit_days"], 30);

    let mut left = usize::MAX;
    for _ in 0..300 {
        left = audit_rows_of(&app, "old-actor").await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(left, 0, "rows older than 30 days are deleted");
    assert_eq!(audit_rows_of(&app, "recent-actor").await, 3, "younger rows stay");
}

mod the_sweeper_deletes_old_audit_rows {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        the_sweeper_deletes_audit_rows_older_than_audit_days(Backend::Sqlite).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        the_sweeper_deletes_audit_rows_older_than_audit_days(Backend::Postgres).await
    }
}
