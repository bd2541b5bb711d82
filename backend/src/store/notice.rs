//! Announcing history entries to other processes. On Postgres, the transaction that appends
//! entries also sends a `NOTIFY` (delivered on commit, in commit order) carrying them when
//! they fit; each process's listener hands them to its event bus. SQLite has one process,
//! so the bus hears of commits directly.

use super::NewEvent;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use trellis_model::trace::EventKind;
use uuid::Uuid;

/// The LISTEN/NOTIFY channel.
pub const CHANNEL: &str = "trellis_events";
/// Postgres refuses payloads of 8,000 bytes or more; bigger batches go without their entries
/// and receivers read them from the history.
const MAX_PAYLOAD: usize = 7_900;

/// What one transaction appended to one instance's history. `D` is an entry's data: owned
/// as received, borrowed as sent (announcing a batch copies none of its entries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Appended<D = Value> {
    /// The store (process) that wrote it: a process skips its own announcements.
    #[serde(rename = "o")]
    pub origin: Uuid,
    #[serde(rename = "i")]
    pub instance: Uuid,
    #[serde(rename = "w")]
    pub workflow: Uuid,
    /// `seq` of the first entry, and how many there are.
    #[serde(rename = "f")]
    pub first: i64,
    #[serde(rename = "n")]
    pub count: i64,
    /// The entries themselves, unless they were too big to announce.
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<WireEvent<D>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireEvent<D = Value> {
    #[serde(rename = "k")]
    pub kind: EventKind,
    #[serde(rename = "a")]
    pub at: DateTime<Utc>,
    #[serde(rename = "d")]
    pub data: D,
}

/// Whether `payload` is an announcement `origin` sent. Every process hears its own NOTIFYs:
/// they are skipped by their first field (`payload` writes the origin first), not parsed.
pub fn sent_by(payload: &str, origin: Uuid) -> bool {
    let field = "{\"o\":\"";
    payload
        .strip_prefix(field)
        .is_some_and(|rest| rest.starts_with(origin.hyphenated().encode_lower(&mut Uuid::encode_buffer()) as &str))
}

/// What a process's listener reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    Appended(Appended),
    /// The listener lost its connection: announcements may have been missed, so whatever
    /// a process remembers of recent entries must be read again from the history.
    Gap,
}

/// The NOTIFY payload for `events`, appended at `first`.
pub fn payload(origin: Uuid, instance: Uuid, workflow: Uuid, first: i64, events: &[NewEvent]) -> String {
    let wire = events.iter().map(|e| WireEvent { kind: e.kind, at: e.at, data: &e.data }).collect();
    let mut appended = Appended { origin, instance, workflow, first, count: events.len() as i64, events: Some(wire) };
    let text = serde_json::to_string(&appended).unwrap_or_default();
    if text.len() < MAX_PAYLOAD {
        return text;
    }
    appended.events = None;
    serde_json::to_string(&appended).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(size: usize) -> NewEvent {
        NewEvent { kind: EventKind::Node, at: Utc::now(), data: json!({"error": "x".repeat(size)}) }
    }

    #[test]
    fn small_batches_travel_with_their_entries() {
        let text = payload(Uuid::nil(), Uuid::nil(), Uuid::nil(), 7, &[event(10), event(10)]);
        let appended: Appended = serde_json::from_str(&text).unwrap();
        assert_eq!((appended.first, appended.count), (7, 2));
        assert_eq!(appended.events.unwrap()[1].data["error"], "x".repeat(10));
    }

    #[test]
    fn big_batches_are_announced_without_them() {
        let text = payload(Uuid::nil(), Uuid::nil(), Uuid::nil(), 1, &[event(9_000)]);
        assert!(text.len() < MAX_PAYLOAD);
        let appended: Appended = serde_json::from_str(&text).unwrap();
        assert_eq!((appended.count, appended.events), (1, None));
    }

    #[test]
    fn a_process_knows_its_own_announcements_by_their_first_field() {
        let origin = Uuid::now_v7();
        let text = payload(origin, Uuid::nil(), Uuid::nil(), 1, &[event(10)]);
        assert!(sent_by(&text, origin));
        assert!(!sent_by(&text, Uuid::now_v7()));
        assert!(!sent_by("not json", origin));
    }
}
