//! OpenTelemetry export of the same spans the history records, with their W3C ids, through
//! the OTLP exporter (HTTP, protobuf) to `OTEL_EXPORTER_OTLP_ENDPOINT`.
//!
//! The process that commits a span's end exports it, after the commit, from a bounded
//! queue: the engine never waits for the collector, and a span the queue cannot take is
//! counted as dropped rather than slowing anything down. (A crash between the commit and
//! the export loses that span from the collector; the history keeps it.)

use super::metrics::Metrics;
use async_trait::async_trait;
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use opentelemetry_sdk::Resource;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use trellis_model::trace::{Span, SpanStatus};

const QUEUE: usize = 8_192;
const BATCH: usize = 512;
const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// Hands ended spans to the export task.
pub struct Exporter {
    queue: mpsc::Sender<Span>,
    metrics: Arc<Metrics>,
}

impl Exporter {
    /// Starts exporting to `endpoint` (an OTLP/HTTP base URL such as
    /// `http://collector:4318`; `/v1/traces` is added unless the URL already names it).
    pub fn start(endpoint: &str, metrics: Arc<Metrics>) -> anyhow::Result<Exporter> {
        let base = endpoint.trim_end_matches('/');
        let url = if base.ends_with("/v1/traces") { base.to_owned() } else { format!("{base}/v1/traces") };
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(ReqwestClient(crate::http_client::builder().timeout(Duration::from_secs(10)).build()?))
            .with_endpoint(url.clone())
            .build()?;
        let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "trellis".to_owned());
        exporter.set_resource(&Resource::builder().with_service_name(service).build());
        let (queue, spans) = mpsc::channel(QUEUE);
        tokio::spawn(export_loop(exporter, spans, metrics.clone()));
        tracing::info!(%url, "exporting spans over OTLP");
        Ok(Exporter { queue, metrics })
    }

    pub fn export(&self, span: Span) {
        if self.queue.try_send(span).is_err() {
            self.metrics.spans_dropped.inc();
        }
    }
}

async fn export_loop(
    exporter: opentelemetry_otlp::SpanExporter,
    mut spans: mpsc::Receiver<Span>,
    metrics: Arc<Metrics>,
) {
    let scope = InstrumentationScope::builder("trellis").with_version(env!("CARGO_PKG_VERSION")).build();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let Some(first) = spans.recv().await else { return };
        batch.push(span_data(&first, &scope));
        // Gather what else arrives shortly, so one request carries many spans.
        let deadline = tokio::time::Instant::now() + FLUSH_EVERY;
        while batch.len() < BATCH {
            match tokio::time::timeout_at(deadline, spans.recv()).await {
                Ok(Some(span)) => batch.push(span_data(&span, &scope)),
                _ => break,
            }
        }
        let count = batch.len() as u64;
        if let Err(e) = exporter.export(std::mem::take(&mut batch)).await {
            tracing::warn!(error = %e, spans = count, "OTLP export failed; the spans are dropped");
            metrics.spans_dropped.inc_by(count);
        }
    }
}

fn span_data(span: &Span, scope: &InstrumentationScope) -> SpanData {
    let trace_id = TraceId::from_hex(&span.trace_id).unwrap_or(TraceId::INVALID);
    let span_id = SpanId::from_hex(&span.span_id).unwrap_or(SpanId::INVALID);
    let parent = span.parent_span_id.as_deref().and_then(|p| SpanId::from_hex(p).ok()).unwrap_or(SpanId::INVALID);
    // Only the instance span has a parent outside Trellis (from the caller's traceparent).
    let remote_parent = span.kind == trellis_model::trace::SpanKind::Instance && parent != SpanId::INVALID;
    let status = match span.status {
        SpanStatus::Ok => Status::Ok,
        SpanStatus::Error => {
            let message = span.attributes.get("error").and_then(Value::as_str).unwrap_or("error").to_owned();
            Status::error(message)
        }
        SpanStatus::Unset => Status::Unset,
    };
    let mut attributes: Vec<KeyValue> = span.attributes.iter().map(|(k, v)| attribute(k, v)).collect();
    attributes.push(KeyValue::new("trellis.span_kind", span.kind.as_str()));
    SpanData {
        span_context: SpanContext::new(trace_id, span_id, TraceFlags::SAMPLED, false, TraceState::default()),
        parent_span_id: parent,
        parent_span_is_remote: remote_parent,
        span_kind: if remote_parent { SpanKind::Server } else { SpanKind::Internal },
        name: span.name.clone().into(),
        start_time: span.start.into(),
        end_time: span.end.unwrap_or(span.start).into(),
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status,
        instrumentation_scope: scope.clone(),
    }
}

fn attribute(key: &str, value: &Value) -> KeyValue {
    let key = key.to_owned();
    match value {
        Value::Bool(b) => KeyValue::new(key, *b),
        Value::Number(n) if n.is_i64() => KeyValue::new(key, n.as_i64().unwrap_or_default()),
        Value::Number(n) => KeyValue::new(key, n.as_f64().unwrap_or_default()),
        Value::String(s) => KeyValue::new(key, s.clone()),
        other => KeyValue::new(key, other.to_string()),
    }
}

/// The OTLP exporter's transport on the reqwest client Trellis already uses.
#[derive(Debug)]
struct ReqwestClient(reqwest::Client);

#[async_trait]
impl HttpClient for ReqwestClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut outgoing = self.0.request(parts.method, parts.uri.to_string()).body(body.to_vec());
        for (name, value) in &parts.headers {
            outgoing = outgoing.header(name, value);
        }
        let response = outgoing.send().await?;
        let mut builder = Response::builder().status(response.status().as_u16());
        for (name, value) in response.headers() {
            builder = builder.header(name.as_str(), value.as_bytes());
        }
        let body = response.bytes().await?;
        Ok(builder.body(Bytes::from(body.to_vec()))?)
    }
}
