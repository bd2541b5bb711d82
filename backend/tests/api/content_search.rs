//! Search by content: `input.<path>=<value>` and `output.<node>.<path>=<value>` on the
//! instances list (and the bulk filters), compared as JSON when the value parses as JSON.

use crate::cli_client::{assert_exit, stderr, stdout, Client};
use crate::common::{both_backends, problem, TestApp};
use serde_json::{json, Value};
use trellis_model::api::{BulkAnswer, InstancePage};
use trellis_model::InstanceStatus;

/// One node, `shape`, whose output carries the input's tier.
fn shaping() -> Value {
    json!({"nodes": [{"id": "shape", "type": "transform", "config": {"expression": "{'tier': input.tier}"}}]})
}

/// The orders: (name, input), started in this order on one workflow.
fn orders() -> Vec<(&'static str, Value)> {
    vec![
        ("acme-4411", json!({"customer": "acme", "order": {"id": 4411, "total": 42}, "tier": "gold"})),
        ("acme-text", json!({"customer": "acme", "order": {"id": "42", "total": "42"}, "tier": "silver"})),
        ("globex", json!({"customer": "globex", "order": {"id": 7, "total": 42.0}, "tier": "gold"})),
        ("acme-flag", json!({"customer": "acme", "flag": true, "note": null, "tier": "bronze"})),
    ]
}

/// Starts the orders on `workflow` and waits for each to end; their ids by name.
async fn start_orders(app: &TestApp, workflow: &str) -> Vec<(&'static str, String)> {
    let mut started = Vec::new();
    for (name, input) in orders() {
        let id = app.start(workflow, json!({"input": input})).await;
        assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded, "{name}");
        started.push((name, id));
    }
    started
}

async fn page(app: &TestApp, query: &str) -> InstancePage {
    let answer = app.get(&format!("/api/v1/instances?{query}")).send().await.unwrap();
    assert_eq!(answer.status(), 200, "{query}");
    answer.json().await.unwrap()
}

/// The names of the orders a query lists, oldest first.
async fn found(app: &TestApp, started: &[(&'static str, String)], query: &str) -> Vec<&'static str> {
    let listed = page(app, query).await;
    let mut names: Vec<&str> =
        started.iter().filter(|(_, id)| listed.items.iter().any(|i| &i.id == id)).map(|(n, _)| *n).collect();
    names.sort_by_key(|n| started.iter().position(|(m, _)| m == n));
    names
}

async fn content_filters_compare_strings_numbers_and_nested_paths_as_json(app: TestApp) {
    let wf = app.publish(shaping()).await;
    let started = start_orders(&app, &wf).await;
    let cases: [(&str, &[&str]); 9] = [
        ("input.customer=acme", &["acme-4411", "acme-text", "acme-flag"]),
        // 42 is the number (42.0 too), "42" the string.
        ("input.order.total=42", &["acme-4411", "globex"]),
        ("input.order.total=%2242%22", &["acme-text"]),
        ("input.order.id=4411", &["acme-4411"]),
        ("input.flag=true", &["acme-flag"]),
        ("input.flag=1", &[]),
        ("input.note=null", &["acme-flag"]),
        ("input.customer=ACME", &[]),
        ("input.order=42", &[]),
    ];
    for (query, expected) in cases {
        assert_eq!(found(&app, &started, &format!("workflow={wf}&{query}")).await, expected, "{query}");
    }
}

async fn node_outputs_and_several_filters_combine_with_the_others_counts_included(app: TestApp) {
    let wf = app.publish(shaping()).await;
    let started = start_orders(&app, &wf).await;
    let other = app.publish(shaping()).await;
    let elsewhere = app.start(&other, json!({"input": {"customer": "acme", "tier": "gold"}})).await;
    app.wait_finished(&elsewhere).await;

    assert_eq!(found(&app, &started, "output.shape.tier=gold").await, ["acme-4411", "globex"]);
    assert_eq!(found(&app, &started, "output.shape.tier=gold&input.customer=acme").await, ["acme-4411"]);
    assert_eq!(found(&app, &started, "output.nowhere.tier=gold").await, Vec::<&str>::new());
    let everywhere = page(&app, "input.customer=acme&output.shape.tier=gold").await;
    assert_eq!(everywhere.items.len(), 2, "both workflows' acme gold orders");
    let only_one = page(&app, &format!("workflow={other}&input.customer=acme")).await;
    assert_eq!(only_one.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [elsewhere.as_str()]);

    // The counts honour the content filter (and, as ever, not the status).
    let failed = page(&app, &format!("workflow={wf}&status=failed&input.customer=acme")).await;
    assert!(failed.items.is_empty());
    assert_eq!(
        (failed.counts.get(InstanceStatus::Succeeded), failed.counts.get(InstanceStatus::Failed)),
        (3, 0),
        "{:?}",
        failed.counts
    );
    let paged = page(&app, &format!("workflow={wf}&input.customer=acme&limit=2")).await;
    let rest = page(&app, &format!("workflow={wf}&input.customer=acme&cursor={}", paged.next_cursor.unwrap())).await;
    assert_eq!(paged.items.len() + rest.items.len(), 3);
}

async fn bulk_filters_take_content_keys_and_refuse_unknown_ones(app: TestApp) {
    let wf = app.publish(shaping()).await;
    start_orders(&app, &wf).await;
    let dry =
        |filter: Value| app.post("/api/v1/instances/purge").json(&json!({"filter": filter, "dry_run": true})).send();
    let answer: BulkAnswer = dry(json!({"workflow": wf, "input.customer": "acme", "output.shape.tier": "gold"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer.matched, 1, "{answer:?}");
    let numbers: BulkAnswer =
        dry(json!({"workflow": wf, "input.order.total": "42"})).await.unwrap().json().await.unwrap();
    assert_eq!(numbers.matched, 2, "{numbers:?}");
    let unknown = problem(dry(json!({"workflow": wf, "bogus": "x"})).await.unwrap(), 422).await;
    assert_eq!(unknown["errors"][0]["path"], "filter.bogus", "{unknown}");
    let malformed = problem(dry(json!({"input..customer": "acme"})).await.unwrap(), 422).await;
    assert_eq!(malformed["errors"][0]["path"], "filter.input..customer", "{malformed}");
}

async fn malformed_content_filters_are_refused_naming_the_parameter(app: TestApp) {
    let long = "x".repeat(1_025);
    let deep = format!("input{}", ".k".repeat(11));
    for (query, name) in [
        ("input..customer=acme".to_owned(), "input..customer"),
        ("input.customer.=acme".to_owned(), "input.customer."),
        ("input=acme".to_owned(), "input"),
        ("output=1".to_owned(), "output"),
        ("input.cust%20omer=acme".to_owned(), "input.cust omer"),
        (format!("{deep}=1"), deep.as_str()),
        (format!("input.customer={long}"), "input.customer"),
        ("input.customer=%7B%22a%22%3A1%7D".to_owned(), "input.customer"),
    ] {
        let answer = app.get(&format!("/api/v1/instances?{query}")).send().await.unwrap();
        let body = problem(answer, 422).await;
        assert_eq!(body["errors"][0]["path"], name, "{query}: {body}");
        assert!(body["detail"].as_str().unwrap().contains(&format!("`{name}`")), "{query}: {body}");
    }
    let many: Vec<String> = (0..11).map(|n| format!("input.k{n}=1")).collect();
    let answer = app.get(&format!("/api/v1/instances?{}", many.join("&"))).send().await.unwrap();
    assert!(problem(answer, 422).await["detail"].as_str().unwrap().contains("at most 10"));
    // Other unknown parameters are still refused.
    let unknown = app.get("/api/v1/instances?inputs.customer=acme").send().await.unwrap();
    assert_eq!(unknown.status(), 400);
}

async fn the_cli_filters_by_content_with_where(app: TestApp) {
    let wf = app.publish(shaping()).await;
    let started = start_orders(&app, &wf).await;
    let cli = Client::new(&app).await;
    let out = cli
        .run(&[
            "instance",
            "list",
            "-w",
            &wf,
            "--where",
            "input.customer=acme",
            "--where",
            "input.order.total=42",
            "-o",
            "json",
        ])
        .await;
    assert_exit(&out, 0);
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["id"], started[0].1.as_str());
    let quoted = cli.run(&["instance", "list", "--where", "input.order.total=\"42\"", "-o", "json"]).await;
    assert_eq!(serde_json::from_str::<Value>(&stdout(&quoted)).unwrap()[0]["id"], started[1].1.as_str());
    let bad = cli.run(&["instance", "list", "--where", "input..customer=acme"]).await;
    assert_exit(&bad, 2);
    assert!(stderr(&bad).contains("`input..customer`"), "{}", stderr(&bad));
    let help = cli.run(&["instance", "list", "--help"]).await;
    assert!(stdout(&help).contains("--where <PATH=VALUE>"), "{}", stdout(&help));
}

both_backends!(
    the_cli_filters_by_content_with_where,
    content_filters_compare_strings_numbers_and_nested_paths_as_json,
    node_outputs_and_several_filters_combine_with_the_others_counts_included,
    bulk_filters_take_content_keys_and_refuse_unknown_ones,
    malformed_content_filters_are_refused_naming_the_parameter,
);
