//! Following an instance over its event stream (`GET /instances/{id}/events`): `watch`
//! prints each node's progress, `start --wait` only waits. The server replays the history,
//! streams live entries and ends the stream after the entry that finished the instance; a
//! stream cut short is resumed with `Last-Event-ID`, so no entry is missed or repeated.
//!
//! Server-sent events are parsed here (a line protocol of four fields) rather than with a
//! crate: the stream is read with reqwest's `chunk()`, which needs no `Stream` adapter.

use super::api::Api;
use super::failure::{CliError, CliResult, Exit};
use super::render::{self, Output};
use super::say;
use reqwest::Method;
use std::time::Duration;
use trellis_model::trace::HistoryEvent;
use trellis_model::InstanceStatus;

/// Reconnections in a row without a single new entry before giving up.
const MAX_RECONNECTS: u32 = 8;

/// One parsed event: its `id:` and `data:` (the `event:` name is in the data too).
#[derive(Debug, Default, PartialEq)]
pub struct Frame {
    pub id: Option<String>,
    pub data: String,
}

/// An incremental server-sent events parser: bytes in, complete frames out.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    current: Frame,
    has_data: bool,
}

impl SseParser {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Frame> {
        self.buffer.extend_from_slice(bytes);
        let mut frames = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if self.has_data {
                    frames.push(std::mem::take(&mut self.current));
                }
                self.current = Frame::default();
                self.has_data = false;
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => self.current.id = Some(value.to_owned()),
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                }
                _ => {} // `event:`, `retry:` and comments (keep-alives)
            }
        }
        frames
    }
}

/// Follows instance `id` until it ends, calling `seen` with each history entry; returns the
/// final status.
pub async fn follow(api: &Api, id: &str, mut seen: impl FnMut(&HistoryEvent)) -> CliResult<InstanceStatus> {
    let mut last_seq: Option<i64> = None;
    let mut failures = 0;
    loop {
        let mut request =
            api.request(Method::GET, &format!("/instances/{id}/events")).header("accept", "text/event-stream");
        if let Some(seq) = last_seq {
            request = request.header("last-event-id", seq.to_string());
        }
        let before = last_seq;
        let ended = match api.send(request).await {
            Ok(response) => read_stream(api, response, &mut last_seq, &mut seen).await,
            // A refusal (the instance is gone, the token expired) will not change by retrying.
            Err(e) if e.exit != Exit::Unreachable => return Err(e),
            Err(e) => Err(e),
        };
        match ended {
            Ok(Some(status)) => return Ok(status),
            Ok(None) | Err(_) if failures < MAX_RECONNECTS => {}
            Ok(None) => return Err(CliError::unreachable("the event stream keeps ending before the instance does")),
            Err(e) => return Err(e),
        }
        failures = if last_seq != before { 0 } else { failures + 1 };
        // Back off a little more each time the stream ends without news.
        tokio::time::sleep(Duration::from_millis(200 * u64::from(failures.max(1)))).await;
    }
}

/// Reads one connection's events; `Some(status)` once the instance has ended, `None` when
/// the stream ended (or broke) first.
async fn read_stream(
    api: &Api,
    mut response: reqwest::Response,
    last_seq: &mut Option<i64>,
    seen: &mut impl FnMut(&HistoryEvent),
) -> CliResult<Option<InstanceStatus>> {
    let mut parser = SseParser::default();
    let mut ended = None;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(ended),
            Err(_) if ended.is_some() => return Ok(ended),
            Err(e) => return Err(api.transport_error(&e)),
        };
        for frame in parser.push(&chunk) {
            let Ok(event) = serde_json::from_str::<HistoryEvent>(&frame.data) else { continue };
            *last_seq = Some(event.seq);
            seen(&event);
            // A retried instance replays its earlier end first: only the latest entry counts.
            if event.event == "instance" {
                ended = final_status(&event);
            }
        }
    }
}

/// The status an `instance` entry ends the instance with, if it does.
fn final_status(event: &HistoryEvent) -> Option<InstanceStatus> {
    if event.event != "instance" {
        return None;
    }
    let status = InstanceStatus::parse(event.data.get("status")?.as_str()?)?;
    status.is_terminal().then_some(status)
}

/// `trellis instance watch ID`: prints node and instance changes (or every entry as JSON)
/// until the instance ends.
pub async fn watch(api: &Api, output: Output, id: &str) -> CliResult<Exit> {
    let status = follow(api, id, |event| match output {
        Output::Table if matches!(event.event.as_str(), "node" | "instance") => {
            say!("{}  {}", event.at.format("%H:%M:%S%.3f"), describe(event))
        }
        Output::Table => {}
        Output::Json | Output::Jsonl => say!("{}", render::compact(event)),
    })
    .await?;
    Ok(if status == InstanceStatus::Succeeded { Exit::Success } else { Exit::Unsuccessful })
}

/// Waits for instance `id` to end, printing nothing.
pub async fn wait(api: &Api, id: &str) -> CliResult<InstanceStatus> {
    follow(api, id, |_| {}).await
}

/// A history entry in a few words: `node fetch: running (attempt 1)`.
pub fn describe(event: &HistoryEvent) -> String {
    let field = |name: &str| event.data.get(name).and_then(|v| v.as_str()).unwrap_or("").to_owned();
    let error = match field("error") {
        e if e.is_empty() => String::new(),
        e => format!(": {}", render::text(Some(&e), 120)),
    };
    match event.event.as_str() {
        "node" if event.data.get("items").is_some_and(|i| i.is_object()) => {
            let count = |name: &str| event.data["items"].get(name).and_then(|v| v.as_u64()).unwrap_or(0);
            let (done, failed) = (count("succeeded") + count("failed"), count("failed"));
            format!("node {}: {done} / {} items done, {failed} failed", field("node"), count("total"))
        }
        "node" => {
            let attempt = event.data.get("attempt").and_then(|a| a.as_u64()).unwrap_or(0);
            let attempt = if attempt > 0 { format!(" (attempt {attempt})") } else { String::new() };
            format!("node {}: {}{attempt}{error}", field("node"), field("status"))
        }
        "instance" => format!("instance: {}{error}", field("status")),
        "span_start" => format!("{} started: {}", field("kind"), field("name")),
        "span_end" => format!("{} ended: {} ({})", field("kind"), field("name"), field("status")),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_progress_entry_reads_as_progress() {
        let entry: HistoryEvent = serde_json::from_value(serde_json::json!({
            "seq": 4, "instance_id": "i", "at": "2026-11-26T10:00:00Z", "event": "node", "node": "each",
            "status": "running", "previous": "running", "attempt": 1,
            "items": {"total": 100, "succeeded": 35, "failed": 2, "running": 10}
        }))
        .unwrap();
        assert_eq!(describe(&entry), "node each: 37 / 100 items done, 2 failed");
    }

    #[test]
    fn frames_split_across_chunks_come_out_whole() {
        let mut parser = SseParser::default();
        assert!(parser.push(b": keep-alive\n\nid: 1\nevent: node\nda").is_empty());
        let frames = parser.push(b"ta: {\"a\":1}\n\nid: 2\r\ndata: x\r\ndata: y\r\n\r\n");
        assert_eq!(
            frames,
            [
                Frame { id: Some("1".into()), data: "{\"a\":1}".into() },
                Frame { id: Some("2".into()), data: "x\ny".into() }
            ]
        );
    }
}
