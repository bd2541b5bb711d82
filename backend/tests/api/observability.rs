//! OpenTelemetry export to a real OTLP/HTTP receiver, and the Prometheus page.

use crate::common::{both_backends, chain, Backend, TestApp};
use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc;
use trellis_model::InstanceStatus;

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP trace receiver on loopback: decodes each protobuf export and hands over its
/// spans with their resource's service name.
async fn otlp_receiver() -> (String, mpsc::UnboundedReceiver<(String, Span)>) {
    let (sender, spans) = mpsc::unbounded_channel();
    let receive = move |body: Bytes| {
        let sender = sender.clone();
        async move {
            let request = ExportTraceServiceRequest::decode(body).expect("a protobuf OTLP export");
            for resource in request.resource_spans {
                let service = resource
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|a| a.key == "service.name")
                    .and_then(|a| a.value.as_ref())
                    .map(|v| format!("{:?}", v.value))
                    .unwrap_or_default();
                for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                    let _ = sender.send((service.clone(), span));
                }
            }
            ([("content-type", "application/x-protobuf")], ExportTraceServiceResponse::default().encode_to_vec())
        }
    };
    let app = axum::Router::new().route("/v1/traces", post(receive));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), spans)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_over_otlp_in_the_callers_trace() {
    let (endpoint, mut received) = otlp_receiver().await;
    let app = TestApp::spawn_with(Backend::Sqlite, |serve| serve.otel_endpoint = Some(endpoint)).await;
    let workflow = app.publish(chain()).await;
    let started = app
        .post(&format!("/api/v1/workflows/{workflow}/instances"))
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 201);
    let spans = tokio::time::timeout(Duration::from_secs(60), async {
        let mut spans = Vec::new();
        while spans.len() < 3 {
            spans.push(received.recv().await.unwrap());
        }
        spans
    })
    .await
    .expect("three spans arrive: the instance and its two nodes");
    let (service, root) = spans.iter().find(|(_, s)| s.name == "engine test").expect("the instance span");
    assert!(service.contains("trellis"), "{service}");
    assert_eq!(hex(&root.trace_id), CALLER_TRACE, "the instance joins the caller's trace");
    assert_eq!(hex(&root.parent_span_id), CALLER_SPAN);
    let nodes: Vec<&Span> = spans.iter().map(|(_, s)| s).filter(|s| s.name.starts_with("noop ")).collect();
    assert_eq!(nodes.len(), 2);
    for node in nodes {
        assert_eq!((hex(&node.trace_id), &node.parent_span_id), (CALLER_TRACE.to_owned(), &root.span_id));
        assert!(node.end_time_unix_nano >= node.start_time_unix_nano);
        assert!(node.attributes.iter().any(|a| a.key == "trellis.node_type"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_nodes_forward_the_attempt_as_traceparent() {
    let (sender, mut seen) = mpsc::unbounded_channel::<Option<String>>();
    let target = axum::Router::new().route(
        "/hook",
        post(move |headers: http::HeaderMap| {
            let _ = sender.send(headers.get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_owned));
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, target).await.unwrap() });
    let app = TestApp::spawn(Backend::Sqlite).await;
    let workflow = app.publish(json!({
        "nodes": [{"id": "call", "type": "http", "config": {"method": "POST", "url": format!("http://{addr}/hook")}}],
        "edges": []
    })).await;
    let started = app
        .post(&format!("/api/v1/workflows/{workflow}/instances"))
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let id = started.json::<serde_json::Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    app.wait_finished(&id).await;
    let header = seen.recv().await.unwrap().expect("the call carried a traceparent");
    let history = crate::traces::history(&app, &id).await;
    let attempt = history.iter().find(|h| h["event"] == "span_end" && h["name"] == "http call").unwrap();
    assert_eq!(header, format!("00-{CALLER_TRACE}-{}-01", attempt["span_id"].as_str().unwrap()));
    assert_eq!(attempt["attributes"]["http.response.status_code"], 200);
}

async fn the_metrics_page_parses_as_prometheus_text(app: TestApp) {
    let workflow = app.publish(chain()).await;
    let id = app.start(&workflow, json!({})).await;
    app.wait_finished(&id).await;
    let response = app.get("/metrics").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text");
    let value = |name: &str, label: Option<(&str, &str)>| {
        scrape.samples.iter().find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v))).map(
            |s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => -1.0,
            },
        )
    };
    assert_eq!(value("trellis_instances_started_total", None), Some(1.0), "{text}");
    assert_eq!(value("trellis_instances_finished_total", Some(("status", "succeeded"))), Some(1.0), "{text}");
    assert_eq!(value("trellis_sse_clients", None), Some(0.0));
    assert!(value("trellis_db_pool_connections", Some(("state", "idle"))).is_some());
    for pool_metric in ["trellis_db_pool_max_connections", "trellis_db_pool_wait_seconds", "trellis_db_pool_timeouts"] {
        assert!(value(pool_metric, None).is_some(), "{pool_metric} in {text}");
    }
    assert!(value("trellis_timers_pending", None).is_some());
    // Each committed batch is at least one statement (a remembered one is exactly one); the
    // start is a transaction of its own on top, of at least BEGIN, its rows and COMMIT.
    let gauge = |name: &str| value(name, None).unwrap_or_else(|| panic!("{name} in {text}"));
    let (batches, statements, transactions) =
        (gauge("trellis_commit_batches"), gauge("trellis_engine_statements"), gauge("trellis_engine_transactions"));
    assert!(batches >= 1.0, "{text}");
    assert!(transactions > batches, "the start is a transaction too: {transactions} for {batches} batches");
    assert!(statements >= batches + 3.0, "{statements} statements for {batches} batches");
    assert!(
        scrape
            .samples
            .iter()
            .any(|s| s.metric.starts_with("trellis_node_duration_seconds") && s.labels.get("type") == Some("noop")),
        "{text}"
    );
}

async fn a_retried_instance_counts_as_started_once(app: TestApp) {
    let workflow =
        app.publish(json!({"nodes": [{"id": "flaky", "type": "fail", "config": {"fail_attempts": 1}}]})).await;
    let id = app.start(&workflow, json!({})).await;
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Failed);
    let retried =
        app.post(&format!("/api/v1/instances/{id}/retry")).json(&json!({"from": "failed"})).send().await.unwrap();
    assert!(retried.status().is_success(), "{}", retried.status());
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
    let text = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    let sample = |line: &str| text.lines().find(|l| l.starts_with(line)).map(|l| l[line.len()..].trim().to_owned());
    assert_eq!(sample("trellis_instances_started_total "), Some("1".into()), "{text}");
    assert_eq!(sample("trellis_instances_finished_total{status=\"failed\"} "), Some("1".into()), "{text}");
    assert_eq!(sample("trellis_instances_finished_total{status=\"succeeded\"} "), Some("1".into()), "{text}");
}
both_backends!(the_metrics_page_parses_as_prometheus_text, a_retried_instance_counts_as_started_once);
