//! Finding instances: the list's multi-status filter, the workflow's name on each instance,
//! and bulk actions on selected ids.

use crate::cleanup::{insert_finished, wait_job};
use crate::common::{both_backends, problem, TestApp};
use chrono::Utc;
use serde_json::{json, Value};
use trellis_model::api::{BulkAnswer, InstancePage};
use trellis_model::InstanceStatus;

async fn page(app: &TestApp, query: &str) -> InstancePage {
    let answer = app.get(&format!("/api/v1/instances?{query}")).send().await.unwrap();
    assert_eq!(answer.status(), 200, "{query}");
    answer.json().await.unwrap()
}

fn statuses(page: &InstancePage) -> Vec<InstanceStatus> {
    let mut all: Vec<_> = page.items.iter().map(|i| i.status).collect();
    all.sort_by_key(|s| s.as_str());
    all.dedup();
    all
}

fn ids(page: &InstancePage) -> Vec<String> {
    page.items.iter().map(|i| i.id.clone()).collect()
}

async fn the_list_takes_several_statuses_and_names_each_workflow(app: TestApp) {
    let wf = app.publish(crate::common::chain()).await;
    let ended = Utc::now();
    insert_finished(&app, &wf, &[("succeeded", ended), ("failed", ended), ("failed", ended), ("timed_out", ended)])
        .await;
    let both = [InstanceStatus::Failed, InstanceStatus::TimedOut];
    for query in ["status=failed,timed_out", "status=failed&status=timed_out", "status=timed_out,%20failed,failed"] {
        let listed = page(&app, &format!("workflow={wf}&{query}")).await;
        assert_eq!(listed.items.len(), 3, "{query}");
        assert_eq!(statuses(&listed), both, "{query}");
        // The counts are of the whole filter but its statuses, for the status chips.
        assert_eq!((listed.counts.get(InstanceStatus::Succeeded), listed.counts.get(InstanceStatus::Failed)), (1, 2));
    }
    let listed = page(&app, &format!("workflow={wf}&status=failed&limit=1")).await;
    let rest =
        page(&app, &format!("workflow={wf}&status=failed&limit=1&cursor={}", listed.next_cursor.clone().unwrap()))
            .await;
    assert_eq!((rest.items.len(), rest.items[0].status), (1, InstanceStatus::Failed));
    assert!(
        listed.items.iter().chain(&rest.items).all(|i| i.workflow_name.as_deref() == Some("engine test")),
        "{listed:?}"
    );
    let one = app.instance(&listed.items[0].id).await;
    assert_eq!(one.summary.workflow_name.as_deref(), Some("engine test"));

    let bad = problem(app.get("/api/v1/instances?status=failed,done").send().await.unwrap(), 400).await;
    let detail = bad["detail"].as_str().unwrap();
    assert!(detail.contains("`done`") && detail.contains("timed_out"), "{bad}");
}

async fn a_bulk_action_on_selected_ids_touches_only_them(app: TestApp) {
    let (wf, failed) = app.failed_once_instances(3).await;
    let picked = json!({"ids": [failed[0], failed[2]]});
    let dry: BulkAnswer = app
        .post("/api/v1/instances/retry")
        .json(&json!({"filter": picked, "dry_run": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((dry.matched, dry.skipped), (2, 0), "{dry:?}");
    let mut sample = dry.sample.clone().unwrap();
    sample.sort();
    let mut expected = vec![failed[0].clone(), failed[2].clone()];
    expected.sort();
    assert_eq!(sample, expected);
    let started = app.post("/api/v1/instances/retry").json(&json!({"filter": picked})).send().await.unwrap();
    assert_eq!(started.status(), 202);
    let answer: BulkAnswer = started.json().await.unwrap();
    let job = wait_job(&app, answer.job_id.as_deref().unwrap()).await;
    assert_eq!((job.status.as_str(), job.processed), ("succeeded", 2), "{job:?}");
    assert_eq!(job.filter, json!({"ids": [failed[0], failed[2]]}));
    for (n, id) in failed.iter().enumerate() {
        let expected = if n == 1 { InstanceStatus::Failed } else { InstanceStatus::Succeeded };
        assert_eq!(app.wait_finished(id).await.summary.status, expected, "instance {n}");
    }
    let listed = page(&app, &format!("workflow={wf}&status=succeeded,failed")).await;
    assert_eq!(ids(&listed).len(), 3);
}

async fn bulk_filters_with_several_statuses_or_bad_ids_say_what_to_fix(app: TestApp) {
    let wf = app.publish(crate::common::chain()).await;
    let ended = Utc::now();
    insert_finished(&app, &wf, &[("succeeded", ended), ("failed", ended)]).await;
    // One status the action applies to is enough; the others are counted as skipped.
    let dry: BulkAnswer = app
        .post("/api/v1/instances/purge")
        .json(&json!({"filter": {"workflow": wf, "status": ["failed", "running"]}, "dry_run": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((dry.matched, dry.skipped), (1, 0), "{dry:?}");
    let none_apply = app
        .post("/api/v1/instances/purge")
        .json(&json!({"filter": {"status": "running,queued"}}))
        .send()
        .await
        .unwrap();
    assert!(problem(none_apply, 409).await["detail"].as_str().unwrap().contains("running, queued"));

    let bad: Value = problem(
        app.post("/api/v1/instances/purge").json(&json!({"filter": {"ids": ["nope"]}})).send().await.unwrap(),
        422,
    )
    .await;
    assert_eq!(bad["errors"][0]["path"], "filter.ids[0]", "{bad}");
    let many: Vec<String> = (0..1_001).map(|_| uuid::Uuid::now_v7().to_string()).collect();
    let too_many =
        problem(app.post("/api/v1/instances/purge").json(&json!({"filter": {"ids": many}})).send().await.unwrap(), 422)
            .await;
    assert_eq!(too_many["errors"][0]["path"], "filter.ids", "{too_many}");
    assert!(too_many["detail"].as_str().unwrap().contains("1000"), "{too_many}");
    let jobs: Value = app.get("/api/v1/jobs").send().await.unwrap().json().await.unwrap();
    assert_eq!(jobs["items"].as_array().unwrap().len(), 0, "no refused request started a job");
}
both_backends!(
    the_list_takes_several_statuses_and_names_each_workflow,
    a_bulk_action_on_selected_ids_touches_only_them,
    bulk_filters_with_several_statuses_or_bad_ids_say_what_to_fix
);
