//! `GET /instances/export`: JSON lines and CSV of what the list's filters match, streamed.

use crate::cleanup::insert_finished;
use crate::common::{both_backends, node, problem, TestApp};
use chrono::Utc;
use serde_json::{json, Value};
use trellis_model::api::{ExportedInstance, InstancePage, EXPORT_CSV_COLUMNS};
use trellis_model::NodeStatus;

/// Every id the list shows for `query`, page by page, newest first.
async fn listed_ids(app: &TestApp, query: &str) -> Vec<String> {
    let (mut ids, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let after = cursor.map(|c| format!("&cursor={c}")).unwrap_or_default();
        let answer = app.get(&format!("/api/v1/instances?limit=500&{query}{after}")).send().await.unwrap();
        let page: InstancePage = answer.json().await.unwrap();
        ids.extend(page.items.into_iter().map(|i| i.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
}

/// The export's body for `query`, checking it is an attachment of `media`.
async fn exported(app: &TestApp, token: &str, query: &str, media: &str) -> String {
    let answer = app.client.get(app.url(&format!("/api/v1/instances/export?{query}"))).bearer_auth(token).send().await;
    let answer = answer.unwrap();
    assert_eq!(answer.status(), 200, "{query}");
    assert!(answer.headers()["content-type"].to_str().unwrap().starts_with(media), "{query}");
    let disposition = answer.headers()["content-disposition"].to_str().unwrap().to_owned();
    let extension = if media.contains("csv") { ".csv\"" } else { ".jsonl\"" };
    assert!(disposition.starts_with("attachment; filename=\"instances-") && disposition.ends_with(extension));
    answer.text().await.unwrap()
}

fn jsonl(body: &str) -> Vec<ExportedInstance> {
    body.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect()
}

async fn exports_match_the_list_for_the_same_filter(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    let tricky = "acme, \"the\" corp\nsecond line";
    let mut acme = Vec::new();
    for (n, customer) in [tricky, "globex", tricky, "initech"].into_iter().enumerate() {
        let id = app.start(&wf, json!({"input": {"customer": customer, "n": n}})).await;
        app.wait_finished(&id).await;
        if customer == tricky {
            acme.push(id);
        }
    }
    acme.reverse();
    let filter = format!("workflow={wf}&input.customer={}", urlencode(tricky));
    assert_eq!(listed_ids(&app, &filter).await, acme);
    // A reader may export.
    let viewer = app.token_for("viewer").await;

    let lines = jsonl(&exported(&app, &viewer, &format!("format=jsonl&{filter}"), "application/x-ndjson").await);
    assert_eq!(lines.iter().map(|l| l.summary.id.clone()).collect::<Vec<_>>(), acme);
    assert_eq!(lines[0].input, json!({"customer": tricky, "n": 2}));
    assert_eq!(lines[0].summary.workflow_name.as_deref(), Some("engine test"));
    assert!(lines[0].output.is_some(), "{:?}", lines[0]);

    let csv_body = exported(&app, &viewer, &format!("format=csv&{filter}"), "text/csv").await;
    let mut reader = csv::Reader::from_reader(csv_body.as_bytes());
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), EXPORT_CSV_COLUMNS);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.iter().map(|r| r[0].to_owned()).collect::<Vec<_>>(), acme);
    let input: Value = serde_json::from_str(&rows[0][10]).unwrap();
    assert_eq!(input, json!({"customer": tricky, "n": 2}));
    assert_eq!((&rows[0][2], &rows[0][4]), ("engine test", "succeeded"));
    assert_eq!(&rows[0][1], wf.as_str());
}

async fn a_large_export_pages_through_every_match_in_list_order(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    let rows: Vec<(&str, chrono::DateTime<Utc>)> = (0..1_234).map(|_| ("succeeded", Utc::now())).collect();
    insert_finished(&app, &wf, &rows).await;
    let filter = format!("workflow={wf}");
    let listed = listed_ids(&app, &filter).await;
    assert_eq!(listed.len(), 1_234);
    let token = app.admin_token.clone();
    let lines = jsonl(&exported(&app, &token, &format!("format=jsonl&{filter}"), "application/x-ndjson").await);
    assert_eq!(lines.into_iter().map(|l| l.summary.id).collect::<Vec<_>>(), listed);
    let csv_body = exported(&app, &token, &format!("format=csv&{filter}&status=failed"), "text/csv").await;
    assert_eq!(csv_body.lines().count(), 1, "only the header: {csv_body}");
}

/// `limit` bounds an export to the newest N matches; `cursor` starts it where the list's page
/// ends (its `next_cursor`), so "export from here" works.
async fn an_export_takes_the_lists_limit_and_cursor(app: TestApp) {
    let wf = app.publish(json!({"nodes": [{"id": "n", "type": "noop"}]})).await;
    let rows: Vec<(&str, chrono::DateTime<Utc>)> = (0..250).map(|_| ("succeeded", Utc::now())).collect();
    insert_finished(&app, &wf, &rows).await;
    let listed = listed_ids(&app, &format!("workflow={wf}")).await;
    let token = app.admin_token.clone();
    let ids = |body: String| jsonl(&body).into_iter().map(|l| l.summary.id).collect::<Vec<_>>();
    let first = exported(&app, &token, &format!("format=jsonl&workflow={wf}&limit=120"), "application/x-ndjson").await;
    assert_eq!(ids(first), listed[..120]);
    let from_cursor = format!("format=jsonl&workflow={wf}&cursor={}", listed[9]);
    let rest = exported(&app, &token, &from_cursor, "application/x-ndjson").await;
    assert_eq!(ids(rest), listed[10..]);
    let csv_body = exported(&app, &token, &format!("format=csv&workflow={wf}&limit=3"), "text/csv").await;
    assert_eq!(csv_body.lines().count(), 4, "a header and three rows: {csv_body}");
}

async fn an_export_refuses_unknown_formats_and_bad_filters(app: TestApp) {
    for query in ["format=xml", "", "format=csv&input..a=1"] {
        let answer = app.get(&format!("/api/v1/instances/export?{query}")).send().await.unwrap();
        let body = problem(answer, 422).await;
        assert!(body["errors"][0]["path"].is_string(), "{query}: {body}");
    }
    for paging in ["limit=0", "limit=-1", "limit=lots", "cursor=page-2"] {
        let paged = app.get(&format!("/api/v1/instances/export?format=csv&{paging}")).send().await.unwrap();
        assert_eq!(paged.status(), 400, "{paging}");
    }
    // A name neither the list nor the export knows is refused, as by the list.
    for path in ["/api/v1/instances?", "/api/v1/instances/export?format=csv&"] {
        let answer = app.get(&format!("{path}slowly=true")).send().await.unwrap();
        assert_eq!(answer.status(), 400, "{path}");
    }
    let anonymous = app.client.get(app.url("/api/v1/instances/export?format=csv")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
}

/// A delay of a minute, slow after `stuck_after_ms`.
fn waits(stuck_after_ms: u64) -> Value {
    let wait =
        json!({"id": "wait", "type": "delay", "config": {"duration_ms": 60_000}, "stuck_after_ms": stuck_after_ms});
    json!({"nodes": [{"id": "first", "type": "noop"}, wait], "edges": [{"from": "first", "to": "wait"}]})
}

/// Every list filter works on the export (it reads them with the list's own reader): `slow`,
/// alone and with a content filter, exports exactly the rows the list shows.
async fn an_export_takes_every_list_filter_slow_and_content_included(app: TestApp) {
    let stuck = app.publish(waits(200)).await;
    let patient = app.publish(waits(3_600_000)).await;
    let mut started = Vec::new();
    for (wf, customer) in [(&stuck, "acme"), (&stuck, "globex"), (&patient, "acme"), (&stuck, "acme")] {
        started.push((app.start(wf, json!({"input": {"customer": customer}})).await, wf == &stuck));
    }
    for (id, slow) in &started {
        let running = |i: &trellis_model::api::InstanceDetail| node(i, "wait").status == NodeStatus::Waiting;
        app.wait_for(id, |i| running(i) && node(i, "wait").slow == *slow).await;
    }
    let viewer = app.token_for("viewer").await;
    let slow_acme: Vec<String> = [&started[3].0, &started[0].0].map(|id| id.clone()).to_vec();
    for (filter, expected) in [("slow=true&input.customer=acme", 2), ("slow=true", 3), ("slow=false", 4)] {
        let listed = listed_ids(&app, filter).await;
        assert_eq!(listed.len(), expected, "{filter}: {listed:?}");
        if filter.contains("acme") {
            assert_eq!(listed, slow_acme, "{filter}");
        }
        let lines = jsonl(&exported(&app, &viewer, &format!("format=jsonl&{filter}"), "application/x-ndjson").await);
        assert_eq!(lines.into_iter().map(|l| l.summary.id).collect::<Vec<_>>(), listed, "{filter}");
        let csv_body = exported(&app, &viewer, &format!("format=csv&{filter}"), "text/csv").await;
        let mut reader = csv::Reader::from_reader(csv_body.as_bytes());
        let ids: Vec<String> = reader.records().map(|r| r.unwrap()[0].to_owned()).collect();
        assert_eq!(ids, listed, "{filter}");
    }
    for (id, _) in &started {
        assert_eq!(app.post(&format!("/api/v1/instances/{id}/cancel")).send().await.unwrap().status(), 200);
    }
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

both_backends!(
    an_export_takes_the_lists_limit_and_cursor,
    exports_match_the_list_for_the_same_filter,
    a_large_export_pages_through_every_match_in_list_order,
    an_export_refuses_unknown_formats_and_bad_filters,
    an_export_takes_every_list_filter_slow_and_content_included,
);
