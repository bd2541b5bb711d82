//! The `http` node: renders its request in the sandbox and sends it with the client held to the
//! outbound policy (`crate::http_client::guard`), reading at most 1 MiB of the response.

use super::{evaluate, permanent, Attempt, NodeResult};
use crate::http_client::{guarded_client, OutboundPolicy};
use crate::sandbox::{Job, Sandbox};
use serde_json::{json, Map, Value};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use trellis_model::config::HttpConfig;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

pub struct HttpRunner {
    client: reqwest::Client,
    policy: Arc<OutboundPolicy>,
}

impl HttpRunner {
    pub fn new(policy: OutboundPolicy) -> Self {
        let policy = Arc::new(policy);
        HttpRunner { client: guarded_client(policy.clone()), policy }
    }

    pub async fn run(&self, a: &Attempt<'_>, sandbox: &Sandbox) -> NodeResult {
        let c: HttpConfig = match serde_json::from_value(a.node.config.clone()) {
            Ok(c) => c,
            Err(e) => return permanent(format!("invalid config: {e}")),
        };
        let method = c.method.clone();
        let rendered = match evaluate(sandbox, a, Rendered::jobs(c)).await {
            Ok(values) => match Rendered::from_values(method, values) {
                Ok(rendered) => rendered,
                Err(e) => return permanent(e),
            },
            Err(stopped) => return stopped,
        };
        let request = match self.build(rendered, a) {
            Ok(r) => r,
            Err(e) => return permanent(e),
        };
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                return NodeResult::Failed { error: format!("request failed: {}", error_chain(&e)), retryable: true }
            }
        };
        read_response(response).await
    }

    fn build(&self, c: Rendered, a: &Attempt<'_>) -> Result<reqwest::RequestBuilder, String> {
        let url = c.url;
        let url = reqwest::Url::parse(&url).map_err(|e| format!("invalid url `{url}`: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("unsupported scheme `{}`", url.scheme()));
        }
        // Literal addresses never reach the resolver, so they are checked here.
        if let Some(url::Host::Ipv4(ip)) = url.host().map(|h| h.to_owned()) {
            self.check_literal(IpAddr::V4(ip))?;
        }
        if let Some(url::Host::Ipv6(ip)) = url.host().map(|h| h.to_owned()) {
            self.check_literal(IpAddr::V6(ip))?;
        }
        let method =
            reqwest::Method::from_bytes(c.method.as_bytes()).map_err(|_| format!("bad method `{}`", c.method))?;
        // With a node timeout the engine's durable timer ends the attempt (as `timed_out`);
        // the client's own deadline is only a backstop just past it.
        let timeout =
            a.node.timeout_ms.map_or(DEFAULT_TIMEOUT, |ms| Duration::from_millis(ms) + Duration::from_secs(1));
        let mut request =
            self.client.request(method, url).timeout(timeout).header("Idempotency-Key", &a.idempotency_key);
        if let Some(traceparent) = &a.traceparent {
            // The called service's spans join the instance's trace under this attempt.
            request = request.header("traceparent", traceparent);
        }
        for (name, value) in &c.headers {
            let mut value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| format!("the rendered value of header `{name}` is not a valid header value"))?;
            // With secrets in scope any header may carry one: HTTP client logs (at debug or
            // trace level) then show it as `Sensitive`.
            value.set_sensitive(!a.secrets.is_empty());
            request = request.header(name.as_str(), value);
        }
        if let Some(body) = &c.body {
            request = request.json(body);
        }
        Ok(request)
    }

    fn check_literal(&self, ip: IpAddr) -> Result<(), String> {
        if self.policy.permits(ip) {
            Ok(())
        } else {
            Err(format!("{ip} is outside the outbound policy; allow it with TRELLIS_HTTP_ALLOW"))
        }
    }
}

/// The node's config with its templates rendered (in the sandbox).
struct Rendered {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Option<Value>,
}

impl Rendered {
    /// The templates to render, in one request: the url, the headers, the body.
    fn jobs(c: HttpConfig) -> Vec<Job> {
        let headers = c.headers.into_iter().map(|(name, value)| (name, Value::String(value))).collect();
        let mut jobs = vec![Job::Render(Value::String(c.url)), Job::Render(Value::Object(headers))];
        jobs.extend(c.body.map(Job::Render));
        jobs
    }

    /// The config again from what [`Rendered::jobs`] rendered.
    fn from_values(method: String, values: Vec<Value>) -> Result<Rendered, String> {
        let mut values = values.into_iter();
        let (Some(Value::String(url)), Some(Value::Object(headers))) = (values.next(), values.next()) else {
            return Err("the rendered url or headers came back in another shape".into());
        };
        let headers = headers
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(value) => (name, value),
                other => (name, other.to_string()),
            })
            .collect();
        Ok(Rendered { method, url, headers, body: values.next() })
    }
}

async fn read_response(response: reqwest::Response) -> NodeResult {
    let status = response.status();
    let busy_for = retry_after(status, response.headers());
    let headers: Map<String, Value> = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), Value::String(v.to_str().unwrap_or_default().to_owned())))
        .collect();
    let bytes = match read_capped(response).await {
        Ok(Some(b)) => b,
        Ok(None) => {
            return permanent(format!("the response body is larger than the limit of {MAX_RESPONSE_BYTES} bytes"))
        }
        Err(e) => {
            return NodeResult::Failed {
                error: format!("reading the response failed: {}", error_chain(&e)),
                retryable: true,
            }
        }
    };
    let body =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let output = json!({"status": status.as_u16(), "headers": headers, "body": body});
    if status.is_success() {
        NodeResult::Done { output, outcome: None }
    } else if let Some(retry_after) = busy_for {
        NodeResult::Busy { error: failure_message(status, &bytes), retry_after }
    } else {
        let retryable = status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS;
        NodeResult::Failed { error: failure_message(status, &bytes), retryable }
    }
}

/// How long a 429 or 503 asks to be left alone: its `Retry-After`, in seconds or as an HTTP
/// date (a date past is no wait at all).
fn retry_after(status: reqwest::StatusCode, headers: &reqwest::header::HeaderMap) -> Option<std::time::Duration> {
    use reqwest::StatusCode;
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(std::time::Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some((at.with_timezone(&chrono::Utc) - chrono::Utc::now()).to_std().unwrap_or_default())
}

/// The most of an error response's body its failure keeps: enough for what the service said
/// (`no such sku bad-037`), not a page of HTML. Redacted with the rest of the error.
const ERROR_BODY_EXCERPT: usize = 2048;

/// `HTTP 404 Not Found: {"error":"no such sku bad-037"}`: the status, its reason and the start
/// of the body, which is what an operator needs to know why the call failed.
fn failure_message(status: reqwest::StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return format!("HTTP {status}");
    }
    let head = trellis_model::excerpt::head(text, ERROR_BODY_EXCERPT);
    let excerpt = head.replace(['\r', '\n'], " ");
    match head.len() < text.len() {
        true => format!("HTTP {status}: {excerpt}… ({} bytes in all)", body.len()),
        false => format!("HTTP {status}: {excerpt}"),
    }
}

/// The body, read chunk by chunk so a huge or endless response stops at the limit;
/// `None` when it is over the limit.
async fn read_capped(mut response: reqwest::Response) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > MAX_RESPONSE_BYTES as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_keeps_its_status_reason_and_the_start_of_the_body() {
        let not_found = reqwest::StatusCode::NOT_FOUND;
        assert_eq!(failure_message(not_found, b""), "HTTP 404 Not Found");
        assert_eq!(
            failure_message(not_found, b"{\"error\":\"no such sku bad-037\"}\n"),
            "HTTP 404 Not Found: {\"error\":\"no such sku bad-037\"}"
        );
        let long = "é".repeat(3000);
        let cut = failure_message(reqwest::StatusCode::BAD_GATEWAY, long.as_bytes());
        assert!(cut.starts_with("HTTP 502 Bad Gateway: éé"), "{cut}");
        assert!(cut.ends_with("… (6000 bytes in all)"), "{cut}");
        assert!(cut.len() < ERROR_BODY_EXCERPT + 100);
    }
}
