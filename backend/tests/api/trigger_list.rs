//! Every workflow's triggers in one list, and a mistyped time zone answered with a suggestion.

use crate::common::{both_backends, problem, TestApp};
use serde_json::json;
use trellis_model::api::{Items, Trigger};

async fn every_workflows_triggers_are_listed_with_the_workflow_name(app: TestApp) {
    let (a, b) = (app.publish(crate::common::chain()).await, app.publish(crate::common::chain()).await);
    for (wf, body) in [(&a, json!({"kind": "webhook"})), (&b, json!({"kind": "cron", "expression": "0 9 * * *"}))] {
        let made = app.post(&format!("/api/v1/workflows/{wf}/triggers")).json(&body).send().await.unwrap();
        assert_eq!(made.status(), 201);
    }
    let viewer = app.token_for("viewer").await;
    let listed = app.client.get(app.url("/api/v1/triggers")).bearer_auth(viewer).send().await.unwrap();
    assert_eq!(listed.status(), 200);
    let items = listed.json::<Items<Trigger>>().await.unwrap().items;
    let kinds: Vec<(&str, &str)> = items.iter().map(|t| (t.workflow_id.as_str(), t.kind.as_str())).collect();
    assert_eq!(kinds, [(a.as_str(), "webhook"), (b.as_str(), "cron")]);
    assert!(items.iter().all(|t| t.workflow_name.as_deref() == Some("engine test")), "{items:?}");
    assert!(items[0].url.is_some() && items[1].url.is_none());
}

async fn a_mistyped_time_zone_is_refused_with_the_one_it_meant(app: TestApp) {
    let refused = app
        .post("/api/v1/triggers/preview")
        .json(&json!({"expression": "0 9 * * *", "timezone": "berlin"}))
        .send()
        .await
        .unwrap();
    let body = problem(refused, 422).await;
    assert_eq!(body["errors"][0]["path"], "timezone", "{body}");
    assert!(body["errors"][0]["message"].as_str().unwrap().contains("did you mean `Europe/Berlin`?"), "{body}");
}
both_backends!(
    every_workflows_triggers_are_listed_with_the_workflow_name,
    a_mistyped_time_zone_is_refused_with_the_one_it_meant
);
