//! Execution traces: the entries of an instance's event history and the spans they carry,
//! as the server stores them and the SPA reads them from server-sent events.
//!
//! An instance's history is `seq` 1, 2, 3, ... with no gaps. Each entry has a `kind`:
//! * `instance` — the instance's status changed ([`InstanceChange`]);
//! * `node` — a node's status changed ([`NodeChange`]);
//! * `span_start` / `span_end` — a span opened or closed ([`Span`]). The instance is the
//!   root span; each node attempt, timer, queue wait and signal or task wait is a child.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::status::string_forms;

/// History entry kinds (`event:` of the server-sent events, the stored `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Instance,
    Node,
    SpanStart,
    SpanEnd,
    /// Only on the dashboard feed: instance counts by status (never stored).
    Counts,
}

/// What a span stands for (`Span::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    Instance,
    Node,
    /// A delay node's wait or a retry backoff.
    Timer,
    /// Waiting on a concurrency limit (`max_concurrent_instances` or `max_parallel_nodes`).
    Queue,
    Signal,
    /// Waiting for an external worker to finish a `task` node.
    Task,
    /// A `subworkflow` node waiting for its child instance.
    Child,
    /// An `approval` node waiting for people's decisions.
    Approval,
}

/// `Span::status`, as OpenTelemetry has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanStatus {
    Unset,
    Ok,
    Error,
}

string_forms!(EventKind {
    Instance => "instance", Node => "node", SpanStart => "span_start", SpanEnd => "span_end", Counts => "counts",
});

string_forms!(SpanKind {
    Instance => "instance", Node => "node", Timer => "timer", Queue => "queue", Signal => "signal", Task => "task", Child => "child",
    Approval => "approval",
});

string_forms!(SpanStatus { Unset => "unset", Ok => "ok", Error => "error" });

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// 32 lowercase hex digits (W3C trace-id).
    pub trace_id: String,
    /// 16 lowercase hex digits (W3C parent-id format).
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub name: String,
    pub kind: SpanKind,
    pub status: SpanStatus,
    pub start: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<DateTime<Utc>>,
    #[serde(default)]
    pub attributes: Map<String, Value>,
}

impl Span {
    pub fn duration_ms(&self) -> Option<i64> {
        self.end.map(|end| (end - self.start).num_milliseconds())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceChange {
    pub workflow_id: String,
    pub status: String,
    /// `None` when the instance was just created.
    pub previous: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Something that happened to the instance without changing its status (`status` ==
    /// `previous`): a failure handler that could not be started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeChange {
    pub node: String,
    pub status: String,
    pub previous: String,
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// A running `map` node's progress (its entry's status is unchanged then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<ItemProgress>,
}

/// How far a `map` node's items got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ItemProgress {
    pub total: u32,
    pub succeeded: u32,
    pub failed: u32,
    pub running: u32,
}

impl ItemProgress {
    /// The count an item in `status` is part of (a pending or canceled item is in none).
    pub fn count_of(&mut self, status: crate::NodeStatus) -> Option<&mut u32> {
        use crate::NodeStatus as S;
        match status {
            S::Running | S::Waiting => Some(&mut self.running),
            S::Succeeded => Some(&mut self.succeeded),
            S::Failed | S::TimedOut => Some(&mut self.failed),
            _ => None,
        }
    }

    /// Items that ended, either way.
    pub fn done(&self) -> u32 {
        self.succeeded + self.failed
    }
}

/// One history entry as it goes out in an event's `data:`: the fields of the kind's
/// payload ([`InstanceChange`], [`NodeChange`] or [`Span`]) with the entry's place in the
/// history beside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryEvent {
    pub seq: i64,
    pub instance_id: String,
    pub at: DateTime<Utc>,
    /// The entry kind (an [`EventKind`], kept as text so a client meets a kind a newer
    /// server added as [`HistoryEvent::kind`] `None`, not as an entry that fails to parse);
    /// the payload may have a `kind` of its own.
    pub event: String,
    #[serde(flatten)]
    pub data: Map<String, Value>,
}

impl HistoryEvent {
    /// The entry `seq` of an instance's history, of kind `event`: an object payload's fields
    /// beside the entry's own (which win over a payload field of the same name), any other
    /// payload as `value`.
    pub fn new(instance_id: String, seq: i64, event: EventKind, at: DateTime<Utc>, payload: &Value) -> Self {
        let mut data = match payload {
            Value::Object(map) => map.clone(),
            other => [("value".to_owned(), other.clone())].into_iter().collect(),
        };
        for own in ["seq", "instance_id", "event", "at"] {
            data.remove(own);
        }
        HistoryEvent { seq, instance_id, at, event: event.as_str().to_owned(), data }
    }

    /// The entry kind, when this build knows it.
    pub fn kind(&self) -> Option<EventKind> {
        EventKind::parse(&self.event)
    }

    /// The payload as its kind's type.
    /// Read in place: a catch-up folds thousands of entries, and copying each first doubled it.
    pub fn payload<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(&self.data).ok()
    }
}

/// A W3C `traceparent`: `00-<trace-id>-<parent-id>-<flags>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: String,
    pub span_id: String,
    pub sampled: bool,
}

impl TraceParent {
    /// Parses a `traceparent` header value; `None` for anything the W3C spec says to ignore
    /// (wrong lengths, upper-case or non-hex digits, all-zero ids, version `ff`).
    pub fn parse(value: &str) -> Option<TraceParent> {
        let mut parts = value.trim().split('-');
        let (version, trace_id, span_id, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let valid =
            is_hex(version, 2) && version != "ff" && is_hex(trace_id, 32) && is_hex(span_id, 16) && is_hex(flags, 2);
        // Version 00 has exactly four fields; later versions may append more.
        if !valid || (version == "00" && parts.next().is_some()) || is_zero(trace_id) || is_zero(span_id) {
            return None;
        }
        let sampled = u8::from_str_radix(flags, 16).ok()? & 1 == 1;
        Some(TraceParent { trace_id: trace_id.to_owned(), span_id: span_id.to_owned(), sampled })
    }

    pub fn header(&self) -> String {
        format!("00-{}-{}-{}", self.trace_id, self.span_id, if self.sampled { "01" } else { "00" })
    }
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_zero(s: &str) -> bool {
    s.bytes().all(|b| b == b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_span_statuses_are_written_as_their_names() {
        for k in EventKind::ALL {
            assert_eq!((EventKind::parse(k.as_str()), serde_json::to_value(k).unwrap()), (Some(*k), k.as_str().into()));
        }
        for k in SpanKind::ALL {
            assert_eq!((SpanKind::parse(k.as_str()), serde_json::to_value(k).unwrap()), (Some(*k), k.as_str().into()));
        }
        for s in SpanStatus::ALL {
            assert_eq!(
                (SpanStatus::parse(s.as_str()), serde_json::to_value(s).unwrap()),
                (Some(*s), s.as_str().into())
            );
        }
    }

    #[test]
    fn a_valid_traceparent_round_trips() {
        let value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent = TraceParent::parse(value).unwrap();
        assert_eq!(parent.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parent.span_id, "00f067aa0ba902b7");
        assert!(parent.sampled);
        assert_eq!(parent.header(), value);
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn later_versions_may_carry_more_fields() {
        let parent = TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more").unwrap();
        assert!(!parent.sampled);
    }
}
