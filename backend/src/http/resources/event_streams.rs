//! Execution traces over server-sent events, and the history as JSON.
//!
//! `GET /instances/{id}/events` replays the instance's history after `Last-Event-ID` (or
//! from the start), then follows it live, and ends cleanly after the terminal status
//! entry. Every entry a client gets comes in `seq` order straight after the previous one —
//! from the hub's recent entries or, when those do not reach back, from the store — so a
//! resumed stream has no gap and no duplicate whatever is being written meanwhile.
//! `GET /events` is the dashboard feed: counts by status, then status changes as they happen.

use crate::events::hub::{Channel, ClientGuard, FeedItem, Published};
use crate::events::render_stored;
use crate::http::middleware::authed::{AsViewer, Authed, StillAuthed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{page_limit, ApiPath, ApiQuery};
use crate::http::AppState;
use crate::store::{DynStore, InstanceQuery};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::Response;
use axum::Json;
use bytes::BytesMut;
use futures_util::stream::{self, Stream};
use prometheus_client::metrics::counter::Counter;
use serde::Deserialize;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};
use trellis_model::api::{CountsEvent, History, StatusCounts};
use trellis_model::trace::{EventKind, HistoryEvent};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// History entries read from the store at a time.
const PAGE: i64 = 256;
/// The most history entries one `GET /instances/{id}/history` answers.
pub const MAX_HISTORY_PAGE: i64 = 5_000;
/// Frames joined into one write at most (a replay sends pages of history).
const MAX_CHUNK: usize = 64 * 1024;
/// Comment lines that keep idle connections (and the proxies in between) open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(instance_events)).routes(routes!(history)).routes(routes!(feed))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ResumeParams {
    /// For clients that cannot set `Last-Event-ID`: resume after this `seq`.
    after: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/instances/{id}/events",
    operation_id = "streamInstanceEvents",
    tag = "events",
    params(ResumeParams, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this `seq`")),
    responses((
        status = 200,
        description = "Server-sent events: the whole history, then live entries; `id` is the entry's `seq`",
        content_type = "text/event-stream"
    ))
)]
async fn instance_events(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(params): ApiQuery<ResumeParams>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let after = match last_event_id(&headers)? {
        Some(seq) => seq,
        None => params.after.unwrap_or(0).max(0),
    };
    // Follow first, then look: nothing committed after this point can be missed.
    let channel = state.engine.bus.hub.follow(id);
    let snapshot =
        state.store.get_instance(id).await?.ok_or_else(|| ApiError::NotFound(format!("no instance with id {id}")))?;
    let finished = snapshot.instance.status.is_terminal();
    let follower = Follower {
        store: state.store.clone(),
        instance: id,
        changed: channel.watch(),
        channel,
        sent: after,
        pending: VecDeque::new(),
        read_store: true,
        finished,
        resync_every: Duration::from_millis(state.serve.sse_resync_ms.max(100)),
        last_write: Instant::now(),
        history_reads: state.engine.bus.metrics.sse_history_reads.clone(),
        auth: StillAuthed::new::<AsViewer>(&state, &headers),
        _client: state.engine.bus.hub.client(),
    };
    // Entries go out as the frames rendered once for every client (see `events::render`),
    // so a stream costs no formatting per client.
    let frames =
        stream::unfold(follower, |mut f| async move { f.next().await.map(|frame| (Ok::<_, Infallible>(frame), f)) });
    let response = Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        // Reverse proxies (nginx) must not buffer a live stream.
        .header("x-accel-buffering", "no")
        .body(Body::from_stream(frames))
        .map_err(|e| ApiError::Internal(e.into()))?;
    Ok(response)
}

/// `Last-Event-ID`: the `seq` the client last received.
fn last_event_id(headers: &HeaderMap) -> ApiResult<Option<i64>> {
    let Some(value) = headers.get("last-event-id") else { return Ok(None) };
    let text = value.to_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<i64>().ok().filter(|n| *n >= 0).map(Some).ok_or_else(|| {
        ApiError::BadRequest(format!("Last-Event-ID must be a history seq (a whole number ≥ 0), got `{text}`"))
    })
}

/// One client following one instance's history.
struct Follower {
    store: DynStore,
    instance: Uuid,
    channel: Arc<Channel>,
    changed: watch::Receiver<u64>,
    /// The last `seq` sent.
    sent: i64,
    pending: VecDeque<Arc<Published>>,
    /// The hub cannot be trusted to have everything (start, resync): read the store.
    read_store: bool,
    /// The last entry sent finished the instance.
    finished: bool,
    /// Reread the store this often even without news: the backstop for an announcement
    /// from another process that never arrived.
    resync_every: Duration,
    /// When something (an entry or a keep-alive) was last sent.
    last_write: Instant,
    history_reads: Counter<u64, AtomicU64>,
    /// Ends the stream once its credential no longer holds.
    auth: StillAuthed,
    _client: ClientGuard,
}

impl Follower {
    /// The next chunk to send: every entry ready to go, in order, in one write; `None` ends
    /// the stream.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if !self.auth.holds().await {
                return None;
            }
            if let Some(chunk) = self.take_ready() {
                self.last_write = Instant::now();
                return Some(chunk);
            }
            match self.fetch().await {
                Ok(batch) if !batch.is_empty() => self.pending.extend(batch),
                Ok(_) if self.finished => return None,
                Ok(_) => {
                    let keep_alive_due = KEEP_ALIVE.saturating_sub(self.last_write.elapsed());
                    if keep_alive_due.is_zero() {
                        // A comment line keeps idle connections (and proxies) open.
                        self.last_write = Instant::now();
                        return Some(Bytes::from_static(b":\n\n"));
                    }
                    tokio::select! {
                        changed = self.changed.changed() => if changed.is_err() { return None },
                        _ = tokio::time::sleep(self.resync_every.min(keep_alive_due)) => self.read_store = true,
                        _ = tokio::time::sleep_until(self.auth.due()) => {}
                    }
                }
                Err(e) => {
                    // Ending lets the client reconnect and resume where it was.
                    let instance = self.instance;
                    tracing::warn!(error = %e, %instance, "reading the history failed; ending the stream");
                    return None;
                }
            }
        }
    }

    /// The pending entries that follow `sent` without a gap, as one chunk: a single entry's
    /// shared frame as it is, several concatenated, so a burst costs one write, not one each.
    fn take_ready(&mut self) -> Option<Bytes> {
        let mut first: Option<Bytes> = None;
        let mut joined = BytesMut::new();
        while let Some(entry) = self.pending.pop_front() {
            if entry.seq <= self.sent {
                continue; // already sent
            }
            if entry.seq > self.sent + 1 {
                // Never expected (both sources are contiguous), but never skip entries.
                self.pending.clear();
                self.read_store = true;
                break;
            }
            self.sent = entry.seq;
            self.finished = entry.terminal;
            match first.take() {
                None if joined.is_empty() => first = Some(entry.frame.clone()),
                earlier => {
                    if let Some(earlier) = earlier {
                        joined.extend_from_slice(&earlier);
                    }
                    joined.extend_from_slice(&entry.frame);
                }
            }
            if joined.len() >= MAX_CHUNK {
                break;
            }
        }
        first.or_else(|| (!joined.is_empty()).then(|| joined.freeze()))
    }

    /// The entries after `sent`, from the hub when it has all of them, else from the store.
    async fn fetch(&mut self) -> crate::store::Result<Vec<Arc<Published>>> {
        if !self.read_store {
            if let Some(batch) = self.channel.after(self.sent) {
                return Ok(batch);
            }
        }
        self.history_reads.inc();
        let stored = self.store.events_after(self.instance, self.sent, PAGE).await?;
        // A full page may have more behind it: keep reading the store until it runs dry.
        self.read_store = stored.len() as i64 == PAGE;
        Ok(stored.iter().map(|e| Arc::new(render_stored(self.instance, e))).collect())
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct HistoryParams {
    after: Option<i64>,
    limit: Option<i64>,
}

/// The history as JSON, a page at a time.
#[utoipa::path(
    get,
    path = "/instances/{id}/history",
    operation_id = "showInstanceHistory",
    tag = "events",
    params(HistoryParams),
    responses((status = 200, description = "History entries in `seq` order", body = History))
)]
async fn history(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(p): ApiQuery<HistoryParams>,
) -> ApiResult<Json<History>> {
    let limit = page_limit(p.limit, 500, MAX_HISTORY_PAGE)?;
    state.store.get_instance(id).await?.ok_or_else(|| ApiError::NotFound(format!("no instance with id {id}")))?;
    let after = p.after.unwrap_or(0).max(0);
    let entries = state.store.events_after(id, after, limit).await?;
    let next = (entries.len() as i64 == limit).then(|| entries.last().map(|e| e.seq)).flatten();
    let items = entries.iter().map(|e| HistoryEvent::new(id.to_string(), e.seq, e.kind, e.at, &e.data.0)).collect();
    Ok(Json(History { items, next_after: next }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct FeedParams {
    workflow: Option<Uuid>,
}

#[utoipa::path(
    get,
    path = "/events",
    operation_id = "streamEvents",
    tag = "events",
    params(FeedParams),
    responses((
        status = 200,
        description = "Server-sent events for dashboards: status changes and counts",
        content_type = "text/event-stream"
    ))
)]
async fn feed(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiQuery(p): ApiQuery<FeedParams>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let receiver = state.engine.bus.hub.subscribe_feed();
    let counts = counts(&state.store, p.workflow, false).await?;
    let auth = StillAuthed::new::<AsViewer>(&state, &headers);
    let feed = Feed {
        store: state.store.clone(),
        workflow: p.workflow,
        receiver,
        counts: Some(counts),
        auth,
        _client: state.engine.bus.hub.client(),
    };
    let stream = stream::unfold(feed, |mut f| async move { f.next().await.map(|event| (Ok(event), f)) });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

struct Feed {
    store: DynStore,
    workflow: Option<Uuid>,
    receiver: broadcast::Receiver<Arc<FeedItem>>,
    /// A `counts` event to send first.
    counts: Option<Event>,
    /// Ends the feed once its credential no longer holds.
    auth: StillAuthed,
    _client: ClientGuard,
}

impl Feed {
    async fn next(&mut self) -> Option<Event> {
        if let Some(counts) = self.counts.take() {
            return Some(counts);
        }
        loop {
            let received = tokio::select! {
                received = self.receiver.recv() => received,
                _ = tokio::time::sleep_until(self.auth.due()) => {
                    if !self.auth.holds().await {
                        return None;
                    }
                    continue;
                }
            };
            match received {
                Ok(item) if self.workflow.is_none_or(|w| w == item.workflow) => {
                    return Some(Event::default().event(EventKind::Instance.as_str()).data(&item.json));
                }
                Ok(_) => {}
                // Too slow to keep up: skip ahead and send fresh counts instead.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    return counts(&self.store, self.workflow, true).await.ok()
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// A `counts` event: instances by status (of one workflow, or all).
async fn counts(store: &DynStore, workflow: Option<Uuid>, resync: bool) -> ApiResult<Event> {
    let query = InstanceQuery { workflow, ..InstanceQuery::default() };
    let counts = StatusCounts::of(store.count_instances(&query).await?);
    let data = CountsEvent { workflow_id: workflow.map(|w| w.to_string()), counts, resync };
    let data = serde_json::to_string(&data).map_err(|e| ApiError::Internal(e.into()))?;
    Ok(Event::default().event(EventKind::Counts.as_str()).data(data))
}
