//! What the server and a sandbox worker say to each other over the worker's standard input
//! and output: one request, one answer, each a frame of a 4-byte little-endian length and a
//! MessagePack body. MessagePack because it is compact and self-describing (a JSON value
//! goes through unchanged), and it reads and writes several times faster than JSON text.

use super::script::{Failure, Ran, Script};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{Read, Write};

/// Largest request a worker reads: the largest context the server can assemble (an
/// instance's outputs and input, see `TRELLIS_MAX_INSTANCE_OUTPUT_BYTES`) with room over.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;
/// Largest answer the server reads. A bigger one is refused without being read, so a
/// worker cannot make the server allocate more than this for it.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The program's version and the protocol's (bump the number with any change to the types
/// here): a worker from another build (a binary replaced under a running server) is refused
/// at its start, not misread later.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "/1");

/// What the worker says once it has confined itself, before its first request.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ready {
    /// [`VERSION`] of the worker's build.
    pub version: String,
    /// Whether the syscall filter is on (only on Linux where seccomp is available).
    pub syscall_filter: bool,
    /// Descriptors open beyond standard input, output and error (should be none).
    pub extra_descriptors: usize,
}

#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// A node's expressions and templates, all over one context; values whose JSON is over
    /// `max_result_bytes` together are refused in the worker, before they are sent.
    Evaluate { context: Value, jobs: Vec<Job>, deadline_ms: u64, max_result_bytes: usize },
    /// A `script` node's attempt (or a preview), its output held to `max_result_bytes` of JSON.
    Script { script: Script, deadline_ms: u64, max_result_bytes: usize },
    /// Compile without running: expressions and templates (their syntax) and script sources.
    Check { texts: Vec<Source>, scripts: Vec<String>, deadline_ms: u64 },
}

impl Request {
    /// How long the worker may take; past it, the server kills it.
    pub fn deadline_ms(&self) -> u64 {
        match self {
            Request::Evaluate { deadline_ms, .. }
            | Request::Script { deadline_ms, .. }
            | Request::Check { deadline_ms, .. } => *deadline_ms,
        }
    }

    /// What the user code is called in messages: "expression" or "script".
    pub fn subject(&self) -> &'static str {
        match self {
            Request::Script { .. } => "script",
            Request::Check { scripts, texts, .. } if texts.is_empty() && !scripts.is_empty() => "script",
            _ => "expression",
        }
    }
}

/// A text of a definition to compile: an expression or a template.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Source {
    Expression(String),
    Template(String),
}

impl Source {
    pub fn of(text: trellis_model::Text<'_>) -> Source {
        match text {
            trellis_model::Text::Expression(t) => Source::Expression(t.to_owned()),
            trellis_model::Text::Template(t) => Source::Template(t.to_owned()),
        }
    }

    pub fn text(&self) -> trellis_model::Text<'_> {
        match self {
            Source::Expression(t) => trellis_model::Text::Expression(t),
            Source::Template(t) => trellis_model::Text::Template(t),
        }
    }
}

/// One piece of a node's config to evaluate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Job {
    /// An expression (no braces), to its value.
    Eval(String),
    /// Every string inside a JSON value rendered as a template (`{{ ... }}`).
    Render(Value),
}

impl Job {
    /// The user's texts in this job (what the context is narrowed to).
    pub fn texts(&self) -> Vec<&str> {
        fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
            match value {
                Value::String(s) => out.push(s),
                Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
                Value::Object(fields) => fields.values().for_each(|v| strings(v, out)),
                _ => {}
            }
        }
        match self {
            Job::Eval(text) => vec![text],
            Job::Render(value) => {
                let mut out = Vec::new();
                strings(value, &mut out);
                out
            }
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub enum Answer {
    /// Each job's value in order, or the first job's error (the rest are not run).
    Evaluated(Result<Vec<Value>, String>),
    Script(Ran),
    Checked {
        texts: Vec<Result<(), String>>,
        scripts: Vec<Result<(), Failure>>,
    },
}

/// Encodes `message` as one frame.
pub fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, String> {
    let mut frame = vec![0; 4];
    rmp_serde::encode::write(&mut frame, message).map_err(|e| format!("cannot encode: {e}"))?;
    let len = u32::try_from(frame.len() - 4).map_err(|_| "the message is too large to send".to_owned())?;
    frame[..4].copy_from_slice(&len.to_le_bytes());
    Ok(frame)
}

/// Decodes a frame's body.
pub fn decode<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, String> {
    rmp_serde::from_slice(body).map_err(|e| format!("cannot decode: {e}"))
}

/// Reads one frame's body from a blocking reader (the worker's side); `None` at the end.
pub fn read_frame(reader: &mut impl Read, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0; 4];
    match reader.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(std::io::Error::other(format!("a frame of {len} bytes is over the limit of {max}")));
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Writes one message as a frame to a blocking writer (the worker's side).
pub fn write_message<T: Serialize>(writer: &mut impl Write, message: &T) -> std::io::Result<()> {
    let frame = encode(message).map_err(std::io::Error::other)?;
    writer.write_all(&frame)?;
    writer.flush()
}
