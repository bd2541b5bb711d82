//! A minimal server-sent events reader over a reqwest response, for the trace tests.

use reqwest::Response;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: String,
    pub data: Value,
}

impl SseEvent {
    pub fn seq(&self) -> i64 {
        self.id.as_deref().and_then(|id| id.parse().ok()).expect("history events carry their seq as id")
    }
}

pub struct SseStream {
    response: Response,
    buffer: String,
}

impl SseStream {
    pub fn new(response: Response) -> SseStream {
        assert_eq!(response.status(), 200, "event stream status");
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/event-stream"), "{content_type}");
        SseStream { response, buffer: String::new() }
    }

    /// The next event; `None` when the server ended the stream. Comments (keep-alives) are
    /// skipped.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse(&block) {
                    return Some(event);
                }
                continue;
            }
            let chunk = self.response.chunk().await.expect("reading the event stream")?;
            self.buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8 events"));
        }
    }

    /// Everything up to the end of the stream.
    pub async fn rest(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

fn parse(block: &str) -> Option<SseEvent> {
    let (mut id, mut event, mut data) = (None, "message".to_owned(), Vec::new());
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
        match field {
            "id" => id = Some(value.to_owned()),
            "event" => event = value.to_owned(),
            "data" => data.push(value.to_owned()),
            _ => {}
        }
    }
    if data.is_empty() {
        return None;
    }
    let data = serde_json::from_str(&data.join("\n")).expect("event data is JSON");
    Some(SseEvent { id, event, data })
}
