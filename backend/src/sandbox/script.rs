//! What a `script` node's run is made of, as it travels between the server and a sandbox
//! worker: the source with what it sees and its limits ([`Script`]), and what came of it
//! ([`Ran`]). The worker runs it in QuickJS (`worker/quickjs.rs`, which says why QuickJS).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A run's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub memory_mb: u32,
    pub timeout_ms: u64,
}

/// One run: the source and what it sees, as JSON (the script gets plain values).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Script {
    pub source: String,
    pub input: Json,
    pub nodes: Json,
    pub instance: Json,
    /// In a `map` item: the item and its index (`null` elsewhere).
    #[serde(default)]
    pub item: Json,
    #[serde(default)]
    pub index: Json,
    /// What `Date.now()` and `new Date()` say for the whole run.
    pub now: DateTime<Utc>,
    pub limits: Limits,
}

/// What a run gave: its output (`undefined` is `null`) or why it failed, and its logs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ran {
    pub output: Result<Json, Failure>,
    pub logs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    /// Where in the script, when known (1-based, the script's own lines).
    pub at: Option<Position>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailureKind {
    /// The source does not compile.
    Syntax,
    /// The script threw (an `Error` or any other value).
    Thrown,
    Memory,
    Time,
    /// Calls nested past the stack limit.
    Stack,
    /// The return value cannot be stored as JSON.
    Output,
    /// The engine itself failed (not the script's doing).
    Engine,
}

impl Failure {
    /// Whether another attempt could go differently: a throw may depend on the moment (and
    /// is how a script asks for a retry), a time limit on the machine's load; the rest come
    /// out the same on the same input.
    pub fn retryable(&self) -> bool {
        matches!(self.kind, FailureKind::Thrown | FailureKind::Time | FailureKind::Engine)
    }

    pub(crate) fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure { kind, message: message.into(), at: None }
    }

    pub(crate) fn memory(limits: Limits) -> Failure {
        Failure::new(FailureKind::Memory, format!("script exceeded its {} MiB memory limit", limits.memory_mb))
    }
}
