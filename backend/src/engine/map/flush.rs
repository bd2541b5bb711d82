//! Writes a map attempt's item changes in batches: whatever arrived while the previous batch
//! was being written goes as one transaction (group commit, as `commit/` does for
//! transitions), fenced by the map attempt's lease, with a span per ended item and one
//! progress entry. An item counts as done only once its row is written: after a crash, the
//! items whose ends were not yet written run again.

use super::super::commit::OUTAGE_POLL;
use super::super::run::Runner;
use crate::store::{retry_transient, Fence, MapItemRow, MapItemWrites, NewEvent, Trouble};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;
use trellis_model::trace::{EventKind, ItemProgress, NodeChange, Span, SpanKind, SpanStatus};
use trellis_model::NodeStatus;
use uuid::Uuid;

/// Most rows written in one batch.
const MAX_BATCH: usize = 2_000;

/// One item's new row; `span` for an item that ended (its type, for the span's name).
pub(super) struct Update {
    pub row: MapItemRow,
    pub item_type: &'static str,
}

/// Which map attempt the rows belong to.
pub(super) struct Target {
    pub fence: Fence,
    pub instance: Uuid,
    pub workflow: Uuid,
    pub node: String,
    pub attempt: u32,
    pub trace_id: String,
    pub progress: ItemProgress,
    /// Each item's status as last written.
    pub statuses: HashMap<i32, NodeStatus>,
}

/// Runs until every sender is dropped and what they sent is written. `lost` turns true when
/// the attempt's lease no longer holds (nothing more is written then).
pub(super) async fn flush_loop(
    engine: Arc<Runner>,
    mut target: Target,
    mut updates: mpsc::UnboundedReceiver<Update>,
    lost: Arc<AtomicBool>,
) {
    while let Some(first) = updates.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match updates.try_recv() {
                Ok(update) => batch.push(update),
                Err(_) => break,
            }
        }
        if lost.load(Ordering::SeqCst) {
            continue;
        }
        if let Err(e) = write_batch(&engine, &mut target, batch, &lost).await {
            // The lease will run out and the attempt will be run again: its unwritten items with it.
            tracing::warn!(error = %e, instance = %target.instance, node = %target.node, "could not record map items");
            lost.store(true, Ordering::SeqCst);
        }
    }
}

async fn write_batch(
    engine: &Runner,
    target: &mut Target,
    batch: Vec<Update>,
    lost: &AtomicBool,
) -> crate::store::Result<()> {
    // The last change of each item wins (it may have started and ended within one batch).
    let mut latest: BTreeMap<i32, Update> = BTreeMap::new();
    for update in batch {
        latest.insert(update.row.idx, update);
    }
    let mut events: Vec<NewEvent> = Vec::new();
    let now = Utc::now();
    for update in latest.values() {
        let old = target.statuses.insert(update.row.idx, update.row.status);
        count(&mut target.progress, old, update.row.status);
        if update.row.ended_at.is_some() {
            events.push(item_span(target, update, now));
        }
    }
    events.push(progress_entry(target, now));
    let rows: Vec<MapItemRow> = latest.into_values().map(|u| u.row).collect();
    let writes = MapItemWrites {
        fence: &target.fence,
        instance: target.instance,
        workflow: target.workflow,
        node: &target.node,
        rows: &rows,
        drop_from: None,
        events: &events,
    };
    let written = write_through_outage(engine, &writes).await?;
    match written {
        Some(first) => engine.bus.committed(target.instance, target.workflow, first, &events),
        None => lost.store(true, Ordering::SeqCst),
    }
    Ok(())
}

/// Writes `writes`, retrying transient trouble, and an outage for up to a lease (as a
/// transition's commit does): the items' results land as soon as the database is back.
async fn write_through_outage(engine: &Runner, writes: &MapItemWrites<'_>) -> crate::store::Result<Option<i64>> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(engine.lease_ms);
    loop {
        match retry_transient(|| engine.map_items.write_map_items(writes)).await {
            Err(e) if e.trouble() == Some(Trouble::Unavailable) && std::time::Instant::now() < deadline => {
                tokio::time::sleep(OUTAGE_POLL).await;
            }
            other => return other,
        }
    }
}

/// Moves `progress` from what the item was (`old`) to what it is now (`new`).
fn count(progress: &mut ItemProgress, old: Option<NodeStatus>, new: NodeStatus) {
    if let Some(c) = old.and_then(|status| progress.count_of(status)) {
        *c = c.saturating_sub(1);
    }
    if let Some(c) = progress.count_of(new) {
        *c += 1;
    }
}

/// The span of an item's attempts, from its first start to its end, under the map attempt's.
fn item_span(target: &Target, update: &Update, now: DateTime<Utc>) -> NewEvent {
    let row = &update.row;
    let (idx, attempt) = (row.idx.to_string(), target.attempt.to_string());
    let mut attributes = Map::new();
    attributes.insert("trellis.map_node".into(), json!(target.node));
    attributes.insert("trellis.map_index".into(), json!(row.idx));
    attributes.insert("trellis.node_type".into(), json!(update.item_type));
    attributes.insert("trellis.attempt".into(), json!(row.attempts));
    let status = match row.status {
        NodeStatus::Succeeded => SpanStatus::Ok,
        NodeStatus::Canceled => SpanStatus::Unset,
        _ => SpanStatus::Error,
    };
    if let Some(error) = &row.error {
        attributes.insert("error".into(), json!(error));
    }
    let span = Span {
        trace_id: target.trace_id.clone(),
        span_id: super::super::trace::span_id(target.instance, &["item", &target.node, &attempt, &idx]),
        parent_span_id: Some(super::super::trace::attempt_span_id(
            target.instance,
            &target.node,
            target.attempt.into(),
        )),
        name: format!("{} {}[{}]", update.item_type, target.node, row.idx),
        kind: SpanKind::Node,
        status,
        start: row.started_at.unwrap_or(now),
        end: Some(row.ended_at.unwrap_or(now)),
        attributes,
    };
    entry(EventKind::SpanEnd, serde_json::to_value(span).unwrap_or(Value::Null), now)
}

/// The node entry saying how far the map got (its status is unchanged: running).
fn progress_entry(target: &Target, now: DateTime<Utc>) -> NewEvent {
    let running = NodeStatus::Running.as_str().to_owned();
    let change = NodeChange {
        node: target.node.clone(),
        status: running.clone(),
        previous: running,
        attempt: target.attempt,
        error: None,
        outcome: None,
        items: Some(target.progress),
    };
    entry(EventKind::Node, serde_json::to_value(change).unwrap_or(Value::Null), now)
}

fn entry(kind: EventKind, data: Value, at: DateTime<Utc>) -> NewEvent {
    NewEvent { kind, at, data }
}
