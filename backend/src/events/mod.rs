//! Where committed history entries go after the commit: to the clients following them
//! (`hub`), to `/metrics` (`metrics`) and to OpenTelemetry (`otel`). Entries other
//! processes commit arrive through the store's announcements (Postgres LISTEN/NOTIFY) and
//! reach the same clients; metrics and export stay with the process that committed them.

pub mod hub;
pub mod metrics;
pub mod otel;

use crate::store::notice::{Appended, Notice};
use crate::store::{InstanceStore, NewEvent, StoredEvent};
use chrono::{DateTime, Utc};
use hub::{FeedItem, Hub, Published};
use metrics::Metrics;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use trellis_model::trace::{EventKind, HistoryEvent, Span, SpanKind};
use trellis_model::InstanceStatus;
use uuid::Uuid;

#[derive(Default)]
pub struct EventBus {
    pub hub: Arc<Hub>,
    pub metrics: Arc<Metrics>,
    exporter: OnceLock<otel::Exporter>,
}

impl EventBus {
    /// Exports ended spans over OTLP from now on.
    pub fn export_to(&self, endpoint: &str) -> anyhow::Result<()> {
        let exporter = otel::Exporter::start(endpoint, self.metrics.clone())?;
        let _ = self.exporter.set(exporter);
        Ok(())
    }

    /// Entries this process committed for `instance`, numbered from `first_seq`.
    pub fn committed(&self, instance: Uuid, workflow: Uuid, first_seq: i64, events: &[NewEvent]) {
        self.fan_out(instance, workflow, first_seq, events.iter().map(|e| (e.kind, e.at, &e.data)));
        for event in events {
            self.observe(event.kind, &event.data);
        }
    }

    /// Renders entries for the followers of `instance` and the dashboard feed, if this
    /// process has any: nobody watching, nothing rendered. (A follower that arrives later
    /// reads these committed entries from the store.)
    fn fan_out<'a>(
        &self,
        instance: Uuid,
        workflow: Uuid,
        first: i64,
        entries: impl Iterator<Item = (EventKind, DateTime<Utc>, &'a Value)>,
    ) {
        if !self.hub.is_followed(instance) && !self.hub.has_feed_subscribers() {
            return;
        }
        let published: Vec<Arc<Published>> = entries
            .enumerate()
            .map(|(k, (entry_kind, at, data))| Arc::new(render(instance, first + k as i64, entry_kind, at, data)))
            .collect();
        self.hub.publish(instance, &published);
        for rendered in &published {
            if rendered.kind == EventKind::Instance {
                self.hub.publish_feed(FeedItem { workflow, json: rendered.json.clone() });
            }
        }
    }

    /// Counts and exports what one entry tells.
    fn observe(&self, entry_kind: EventKind, data: &Value) {
        match entry_kind {
            EventKind::Instance => {
                // An instance's first status change has no `previous`; a retry's does (and
                // opens a new instance span, so spans would count retries as starts).
                if data.get("previous").is_none_or(Value::is_null) {
                    self.metrics.instance_started();
                }
                if let Some(status) = entry_status(data).filter(|s| s.is_terminal()) {
                    self.metrics.instance_finished(status.as_str());
                }
            }
            EventKind::SpanEnd => {
                let Ok(span) = serde_json::from_value::<Span>(data.clone()) else { return };
                if span.kind == SpanKind::Node {
                    self.metrics.attempt_ended(&span);
                }
                if let Some(exporter) = self.exporter.get() {
                    exporter.export(span);
                }
            }
            EventKind::Node | EventKind::SpanStart | EventKind::Counts => {}
        }
    }

    /// Entries another process committed.
    async fn announced(&self, store: &dyn InstanceStore, appended: Appended) {
        let Appended { instance, workflow, first, count, events, .. } = appended;
        let entries: Vec<(EventKind, DateTime<Utc>, Value)> = match events {
            Some(events) => events.into_iter().map(|e| (e.kind, e.at, e.data)).collect(),
            // Too big to announce: read them, but only if someone here wants them.
            None if self.hub.is_followed(instance) || self.hub.has_feed_subscribers() => {
                match store.events_after(instance, first - 1, count).await {
                    Ok(stored) => stored.into_iter().map(|e: StoredEvent| (e.kind, e.at, e.data.0)).collect(),
                    Err(e) => {
                        tracing::warn!(error = %e, %instance, "could not read announced history entries");
                        self.hub.forget_all();
                        return;
                    }
                }
            }
            None => return,
        };
        self.fan_out(instance, workflow, first, entries.iter().map(|(entry_kind, at, data)| (*entry_kind, *at, data)));
    }

    /// Relays other processes' announcements until the store's listener ends.
    pub async fn relay(self: Arc<Self>, store: Arc<dyn InstanceStore>) {
        let mut notices = match store.listen().await {
            Ok(Some(notices)) => notices,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for other processes' events; live views will lag until the next resync");
                return;
            }
        };
        while let Some(notice) = notices.recv().await {
            match notice {
                Notice::Appended(appended) => self.announced(&*store, appended).await,
                Notice::Gap => self.hub.forget_all(),
            }
        }
    }
}

/// One entry rendered once for every client: its [`entry_json`] as text and its whole
/// server-sent event.
pub fn render(instance: Uuid, seq: i64, entry_kind: EventKind, at: DateTime<Utc>, data: &Value) -> Published {
    let terminal = entry_kind == EventKind::Instance && entry_status(data).is_some_and(InstanceStatus::is_terminal);
    let json = entry_json(instance, seq, entry_kind, at, data).to_string();
    // Rendered once here rather than per client: compact JSON has no line breaks, so one
    // `data:` line carries it.
    let frame = bytes::Bytes::from(format!("id: {seq}\nevent: {entry_kind}\ndata: {json}\n\n"));
    Published { seq, kind: entry_kind, json, frame, terminal }
}

/// An entry as clients get it (the `data:` of its event, an item of the history): the kind's
/// payload with `seq`, `instance_id`, `event` (the entry kind, also the SSE `event:`) and
/// `at` beside its fields.
pub fn entry_json(instance: Uuid, seq: i64, entry_kind: EventKind, at: DateTime<Utc>, data: &Value) -> Value {
    let entry = HistoryEvent::new(instance.to_string(), seq, entry_kind, at, data);
    serde_json::to_value(entry).expect("history entries serialize")
}

/// The status an `instance` entry records.
fn entry_status(data: &Value) -> Option<InstanceStatus> {
    data.get("status").and_then(Value::as_str).and_then(InstanceStatus::parse)
}

/// A stored entry, rendered.
pub fn render_stored(instance: Uuid, event: &StoredEvent) -> Published {
    render(instance, event.seq, event.kind, event.at, &event.data.0)
}
