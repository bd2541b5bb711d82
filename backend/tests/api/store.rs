//! The store conformance suite: the same expectations of both backends, called directly.

use crate::common::{both_backends, TestApp};
use trellis::store::{NewUser, NewVersion, NewWorkflow, WorkflowQuery, WriteOutcome};
use trellis_model::api::InstanceFilter;
use trellis_model::{Definition, JobKind, Node, Role};
use uuid::Uuid;

fn workflow(name: &str) -> NewWorkflow {
    NewWorkflow {
        id: Uuid::now_v7(),
        name: name.into(),
        description: None,
        draft: Definition::default(),
        now: chrono::Utc::now(),
    }
}

fn one_node(id: &str) -> Definition {
    Definition { nodes: vec![Node::new(id, "noop")], ..Default::default() }
}

fn version() -> NewVersion {
    NewVersion { note: None, published_by: "test".into(), now: chrono::Utc::now(), stuck_after: vec![] }
}

async fn settings_keep_the_first_value_under_concurrent_initialisation(app: TestApp) {
    let store = app.store().await;
    let attempts = (0..8).map(|i| {
        let store = store.clone();
        async move { store.setting_or_init("color", &format!("value-{i}")).await.unwrap() }
    });
    let values = crate::drafts::futures_join_all(attempts).await;
    assert!(values.iter().all(|v| v == &values[0]), "{values:?}");
    assert_eq!(store.setting_or_init("color", "later").await.unwrap(), values[0]);
}

async fn usernames_are_unique(app: TestApp) {
    let store = app.store().await;
    assert!(store.insert_user(&NewUser::new("grace", "h".into(), Role::Editor)).await.unwrap());
    assert!(!store.insert_user(&NewUser::new("grace", "h2".into(), Role::Viewer)).await.unwrap());
    let grace = store.user_by_name("grace").await.unwrap().unwrap();
    assert_eq!((grace.role, grace.password_hash.as_str()), (Role::Editor, "h"));
    assert!(store.set_password("grace", "h3").await.unwrap());
    assert!(!store.set_password("nobody", "h3").await.unwrap());
    assert_eq!(store.user_by_id(grace.id).await.unwrap().unwrap().password_hash, "h3");
}

async fn draft_saves_compare_and_swap_on_the_revision(app: TestApp) {
    let store = app.store().await;
    let w = store.create_workflow(&workflow("cas")).await.unwrap();
    assert_eq!(w.draft_rev, 1);
    assert_eq!(store.save_draft(w.id, Some(1), &one_node("a")).await.unwrap(), WriteOutcome::Done(2));
    assert_eq!(store.save_draft(w.id, Some(1), &one_node("b")).await.unwrap(), WriteOutcome::Stale);
    assert_eq!(store.save_draft(w.id, None, &one_node("c")).await.unwrap(), WriteOutcome::Done(3));
    assert_eq!(store.save_draft(Uuid::now_v7(), None, &one_node("d")).await.unwrap(), WriteOutcome::NotFound);
    let change = trellis::store::WorkflowChange { archived: Some(true), ..Default::default() };
    store.update_workflow(w.id, &change).await.unwrap();
    assert_eq!(store.save_draft(w.id, None, &one_node("e")).await.unwrap(), WriteOutcome::Archived);
    assert_eq!(store.get_workflow(w.id).await.unwrap().unwrap().draft.0, one_node("c"));
}

async fn publish_copies_the_draft_it_was_asked_for_or_reports_it_stale(app: TestApp) {
    let store = app.store().await;
    let w = store.create_workflow(&workflow("pub")).await.unwrap();
    store.save_draft(w.id, Some(1), &one_node("first")).await.unwrap();
    assert_eq!(store.publish(w.id, 1, &version()).await.unwrap(), WriteOutcome::Stale);
    assert_eq!(store.publish(w.id, 2, &version()).await.unwrap(), WriteOutcome::Done(1));
    store.save_draft(w.id, Some(2), &one_node("second")).await.unwrap();
    assert_eq!(store.publish(w.id, 3, &version()).await.unwrap(), WriteOutcome::Done(2));
    assert_eq!(store.get_version(w.id, 1).await.unwrap().unwrap().definition.0, one_node("first"));
    assert_eq!(store.get_version(w.id, 2).await.unwrap().unwrap().definition.0, one_node("second"));
    assert!(store.get_version(w.id, 3).await.unwrap().is_none());
    let listed: Vec<i64> = store.list_versions(w.id).await.unwrap().iter().map(|v| v.version).collect();
    assert_eq!(listed, [2, 1]);
}

async fn workflow_queries_filter_page_and_escape_patterns(app: TestApp) {
    let store = app.store().await;
    let a = store.create_workflow(&workflow("Alpha_1")).await.unwrap();
    let b = store.create_workflow(&workflow("alphaX1")).await.unwrap();
    let query = |name: Option<&str>, before: Option<Uuid>| WorkflowQuery {
        before,
        limit: 10,
        name_contains: name.map(str::to_owned),
        include_archived: false,
    };
    let ids = |rows: Vec<trellis::store::WorkflowRecord>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list_workflows(&query(None, None)).await.unwrap()), [b.id, a.id]);
    assert_eq!(ids(store.list_workflows(&query(None, Some(b.id))).await.unwrap()), [a.id]);
    assert_eq!(ids(store.list_workflows(&query(Some("ALPHA_"), None)).await.unwrap()), [a.id]);
    assert_eq!(ids(store.list_workflows(&query(Some("alpha"), None)).await.unwrap()), [b.id, a.id]);
}
async fn a_stored_name_this_build_does_not_know_is_a_decode_error_naming_it(app: TestApp) {
    let store = app.store().await;
    let job = trellis::jobs::new_job(JobKind::Purge, &InstanceFilter::default(), 0, "test");
    store.insert_job(&job).await.unwrap();
    execute(&app.database_url, "UPDATE jobs SET kind = 'archive'").await;
    let error = store.get_job(job.id).await.unwrap_err().to_string();
    assert!(error.contains("unknown job kind `archive`"), "{error}");
}

/// A work item of a kind a newer Trellis wrote: reading it names the row's trouble instead of
/// defaulting, and the engine that claims it leaves it to its lease rather than consuming it.
async fn a_work_item_this_build_cannot_read_is_an_error_naming_it_and_is_never_consumed(app: TestApp) {
    let workflow = app.publish(crate::common::gated()).await;
    let instance = app.start(&workflow, serde_json::json!({})).await;
    execute(
        &app.database_url,
        "INSERT INTO work (id, instance_id, workflow_id, kind, due_at) \
         SELECT id, id, workflow_id, 'approve', created_at FROM instances",
    )
    .await;
    let store = app.store().await;
    let id: Uuid = instance.parse().unwrap();
    let item = store.work_item(id).await.unwrap().expect("the row is there");
    let unreadable = item.work.unwrap_err();
    assert_eq!(unreadable.kind, "approve");
    assert!(unreadable.why.contains("unknown kind `approve`"), "{}", unreadable.why);
    // The engine claims due work every few milliseconds: give it time to, then find the row kept.
    let claimed = async {
        loop {
            let item = store.work_item(id).await.unwrap().expect("never consumed");
            if item.lease_epoch > 0 {
                return item;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), claimed).await.expect("the engine claims it");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(store.work_item(id).await.unwrap().is_some(), "left to its lease, not consumed");
    assert_eq!(app.instance(&instance).await.summary.status, trellis_model::InstanceStatus::Running);
}

/// Runs `sql` on the database behind the store, as a writer outside Trellis would.
async fn execute(database_url: &str, sql: &'static str) {
    if database_url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(database_url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
    } else {
        let pool = sqlx::PgPool::connect(database_url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
}

both_backends!(
    settings_keep_the_first_value_under_concurrent_initialisation,
    usernames_are_unique,
    draft_saves_compare_and_swap_on_the_revision,
    publish_copies_the_draft_it_was_asked_for_or_reports_it_stale,
    workflow_queries_filter_page_and_escape_patterns,
    a_stored_name_this_build_does_not_know_is_a_decode_error_naming_it,
    a_work_item_this_build_cannot_read_is_an_error_naming_it_and_is_never_consumed
);
