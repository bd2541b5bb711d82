//! The `script` node end to end: what a script sees and returns, its logs on the attempt
//! span, syntax errors refused before anything runs, its limits failing only the attempt,
//! and the preview endpoint.

use crate::common::{both_backends, node, problem, TestApp};
use crate::traces::history;
use serde_json::{json, Value};
use trellis_model::{Definition, InstanceStatus, NodeStatus};

fn script(id: &str, source: &str) -> Value {
    json!({"id": id, "type": "script", "config": {"source": source}})
}

fn one_script(source: &str, config: Value) -> Value {
    let mut node = script("s", source);
    node["config"].as_object_mut().unwrap().extend(config.as_object().unwrap().clone());
    json!({"nodes": [node]})
}

/// The ended attempt spans of `node`, oldest first.
async fn attempt_spans(app: &TestApp, instance: &str, node: &str) -> Vec<Value> {
    history(app, instance)
        .await
        .into_iter()
        .filter(|e| e["event"] == "span_end" && e["kind"] == "node" && e["attributes"]["trellis.node"] == node)
        .collect()
}

/// Runs a one-node workflow with `source` and returns the node's error.
async fn script_error(app: &TestApp, source: &str, config: Value) -> String {
    let workflow = app.publish(one_script(source, config)).await;
    let id = app.start(&workflow, json!({})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Failed, "{source}: {done:?}");
    node(&done, "s").error.clone().unwrap_or_default()
}

async fn a_script_computes_from_its_input_and_an_earlier_output_and_its_logs_stay_with_the_attempt(app: TestApp) {
    let source = "console.log('items', input.items.length);\n\
                  const total = input.items.reduce((s, x) => s + x, 0) * nodes.rate.output.factor;\n\
                  return {total, at: new Date().toISOString() === new Date(Date.now()).toISOString(), node: instance.node, same: instance.id};";
    let workflow = app
        .publish(json!({
            "nodes": [
                {"id": "rate", "type": "transform", "config": {"expression": "{'factor': 3}"}},
                script("calc", source)
            ],
            "edges": [{"from": "rate", "to": "calc"}]
        }))
        .await;
    let id = app.start(&workflow, json!({"input": {"items": [1, 2, 4]}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    assert_eq!(node(&done, "calc").output, Some(json!({"total": 21, "at": true, "node": "calc", "same": id})));
    let spans = attempt_spans(&app, &id, "calc").await;
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0]["attributes"]["trellis.logs"], json!(["items 3"]));
    assert_eq!(spans[0]["attributes"]["trellis.node_type"], "script");
}

async fn a_failing_script_keeps_its_logs_and_a_thrown_error_says_where(app: TestApp) {
    let workflow = app.publish(json!({"nodes": [
        {"id": "s", "type": "script", "config": {"source": "console.warn('about to fail');\nthrow new Error('no ' + input.what);"},
         "retry": {"max_attempts": 2, "backoff_ms": 1}}
    ]})).await;
    let id = app.start(&workflow, json!({"input": {"what": "luck"}})).await;
    let done = app.wait_finished(&id).await;
    let s = node(&done, "s");
    assert_eq!((s.status, s.attempts), (NodeStatus::Failed, 2), "a thrown error is retried: {s:?}");
    assert!(s.error.as_deref().unwrap().starts_with("Error: no luck (line 2, column "), "{s:?}");
    let spans = attempt_spans(&app, &id, "s").await;
    assert_eq!(spans.len(), 2);
    assert!(
        spans.iter().all(|span| span["attributes"]["trellis.logs"] == json!(["[warn] about to fail"])),
        "{spans:?}"
    );
}

async fn a_syntax_error_is_named_at_save_and_validate_and_refused_at_publish_with_its_line_and_column(app: TestApp) {
    let bad = json!({"nodes": [
        {"id": "ok", "type": "noop"},
        script("broken", "const a = 1;\nconst b = ;\nreturn a;")
    ]});
    let created = app.post("/api/v1/workflows").json(&json!({"name": "bad", "definition": bad})).send().await.unwrap();
    assert_eq!(created.status(), 201, "a draft is kept with its problems");
    let body: Value = created.json().await.unwrap();
    let issue = &body["problems"][0];
    assert_eq!(
        (issue["code"].as_str(), issue["path"].as_str(), issue["node"].as_str()),
        (Some("script_syntax"), Some("nodes[1].config.source"), Some("broken")),
        "{body}"
    );
    assert!(issue["message"].as_str().unwrap().starts_with("line 2, column 11: "), "{body}");

    let created = app.create_workflow(json!({"name": "draft"})).await;
    let id = created.summary.id;
    let report: Value =
        app.post(&format!("/api/v1/workflows/{id}/validate")).json(&bad).send().await.unwrap().json().await.unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"][0]["path"], "nodes[1].config.source");

    let saved =
        app.put(&format!("/api/v1/workflows/{id}/draft")).header("if-match", "*").json(&bad).send().await.unwrap();
    assert_eq!(saved.status(), 200);
    let body: Value = saved.json().await.unwrap();
    assert_eq!(body["problems"][0]["path"], "nodes[1].config.source", "{body}");

    // A draft stored past the API cannot be published either.
    let definition: Definition = serde_json::from_value(bad).unwrap();
    app.store().await.save_draft(id.parse().unwrap(), None, &definition).await.unwrap();
    let body = problem(app.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap(), 422).await;
    assert!(body["errors"][0]["message"].as_str().unwrap().starts_with("line 2, column 11: "), "{body}");
    let versions: Value =
        app.get(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap().json().await.unwrap();
    assert_eq!(versions["items"], json!([]));
}

async fn scripts_over_their_limits_fail_cleanly_and_the_server_carries_on(app: TestApp) {
    let cases = [
        ("while (true) {}", json!({"timeout_ms": 200}), "script ran longer than its 200 ms limit"),
        (
            "try { while (true) {} } finally { return 'escaped'; }",
            json!({"timeout_ms": 200}),
            "script ran longer than its 200 ms limit",
        ),
        (
            "for (;;) { try { while (true) {} } catch (e) {} }",
            json!({"timeout_ms": 200}),
            "script ran longer than its 200 ms limit",
        ),
        ("return 'x'.repeat(1e9).length;", json!({}), "script exceeded its 64 MiB memory limit"),
        (
            "const a = []; for (;;) a.push(new Array(10000).fill(1));",
            json!({"memory_mb": 16}),
            "script exceeded its 16 MiB memory limit",
        ),
        ("function f(n) { return f(n + 1) + 1; }\nreturn f(0);", json!({}), "stack overflow: calls nested too deeply"),
        ("throw {code: 42};", json!({}), "the script threw {\"code\":42}"),
        ("return () => 1;", json!({}), "the script's return value cannot be stored as JSON: a function at output"),
        (
            "const o = {}; o.self = o; return o;",
            json!({}),
            "the script's return value cannot be stored as JSON: a cycle at output.self",
        ),
    ];
    for (source, config, expected) in cases {
        let error = script_error(&app, source, config).await;
        assert!(error.starts_with(expected), "{source}: {error}");
    }
    let ok = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let workflow = app.publish(one_script("return undefined;", json!({}))).await;
    let id = app.start(&workflow, json!({})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    let wire = app.instance_json(&id).await;
    let s = &wire["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "s").unwrap();
    assert!(s.as_object().unwrap().contains_key("output") && s["output"].is_null(), "undefined is stored as null: {s}");
}

async fn an_endless_script_does_not_hold_up_another_instance(app: TestApp) {
    let spinning = app.publish(one_script("while (true) {}", json!({"timeout_ms": 20000}))).await;
    let spinner = app.start(&spinning, json!({})).await;
    app.wait_for(&spinner, |i| node(i, "s").status == NodeStatus::Running).await;
    let quick = app
        .publish(json!({
            "nodes": [{"id": "first", "type": "noop"}, script("s", "return input.n * 2;")],
            "edges": [{"from": "first", "to": "s"}]
        }))
        .await;
    let id = app.start(&quick, json!({"input": {"n": 21}})).await;
    let done = app.wait_finished(&id).await;
    assert_eq!(node(&done, "s").output, Some(json!(42)));
    let still = app.instance(&spinner).await;
    assert_eq!(still.summary.status, InstanceStatus::Running, "the other finished while the loop still ran");
    let canceled = app.post(&format!("/api/v1/instances/{spinner}/cancel")).json(&json!({})).send().await.unwrap();
    assert!(canceled.status().is_success());
}

async fn the_preview_runs_a_script_against_sample_values(app: TestApp) {
    let request = json!({"source": "console.log('n is', input.n); return input.n + nodes.prev.output;",
                         "input": {"n": 2}, "nodes": {"prev": {"output": 40}}});
    let response = app.post("/api/v1/scripts/preview").json(&request).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"output": 42, "logs": ["n is 2"]}));

    let syntax = app.post("/api/v1/scripts/preview").json(&json!({"source": "return (1;"})).send().await.unwrap();
    let body = problem(syntax, 422).await;
    assert_eq!((body["failure"].as_str(), body["line"].as_u64()), (Some("syntax"), Some(1)), "{body}");
    assert!(body["detail"].as_str().unwrap().starts_with("SyntaxError at line 1, column "), "{body}");

    let thrown = json!({"source": "console.log('before');\nnull.x;"});
    let body = problem(app.post("/api/v1/scripts/preview").json(&thrown).send().await.unwrap(), 422).await;
    assert_eq!((body["failure"].as_str(), body["line"].as_u64()), (Some("thrown"), Some(2)), "{body}");
    assert_eq!(body["logs"], json!(["before"]));

    let slow = json!({"source": "while (true) {}", "timeout_ms": 100});
    let body = problem(app.post("/api/v1/scripts/preview").json(&slow).send().await.unwrap(), 422).await;
    assert_eq!(body["detail"], "script ran longer than its 100 ms limit");

    let invalid = json!({"source": "", "memory_mb": 0});
    let body = problem(app.post("/api/v1/scripts/preview").json(&invalid).send().await.unwrap(), 422).await;
    let paths: Vec<&str> = body["errors"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect();
    assert_eq!(paths, ["source", "memory_mb"], "{body}");

    let viewer = app.token_for("viewer").await;
    let refused =
        app.client.post(app.url("/api/v1/scripts/preview")).bearer_auth(viewer).json(&request).send().await.unwrap();
    problem(refused, 403).await;
}
both_backends!(
    a_script_computes_from_its_input_and_an_earlier_output_and_its_logs_stay_with_the_attempt,
    a_failing_script_keeps_its_logs_and_a_thrown_error_says_where,
    a_syntax_error_is_named_at_save_and_validate_and_refused_at_publish_with_its_line_and_column,
    scripts_over_their_limits_fail_cleanly_and_the_server_carries_on,
    an_endless_script_does_not_hold_up_another_instance,
    the_preview_runs_a_script_against_sample_values
);
