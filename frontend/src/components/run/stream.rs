//! Follows `GET /instances/{id}/events` with the browser's `EventSource` (the session cookie
//! rides along; `Last-Event-ID` resume on reconnect is the browser's). Each entry kind is its
//! own event name, so a listener is added per kind.

use leptos::wasm_bindgen::closure::Closure;
use leptos::wasm_bindgen::JsCast;
use trellis_model::trace::{EventKind, HistoryEvent};
use web_sys::{Event, EventSource, MessageEvent};

type Listener = Closure<dyn Fn(Event)>;

/// An open stream; [`Stream::close`] stops it (and it must be closed: after the terminal entry
/// the server ends the stream and the browser would otherwise reconnect forever).
pub struct Stream {
    source: EventSource,
    _listeners: Vec<Listener>,
}

impl Stream {
    /// Opens the stream. `on_entry` gets each parsed entry; `on_broken` is called when the
    /// browser gives up (the stream was refused, e.g. signed out) rather than reconnecting.
    pub fn open(
        url: &str,
        on_entry: impl Fn(HistoryEvent) + Clone + 'static,
        on_broken: impl Fn() + 'static,
    ) -> Result<Stream, String> {
        let source = EventSource::new(url).map_err(|e| format!("could not open the event stream: {e:?}"))?;
        let mut listeners = Vec::new();
        for kind in [EventKind::Instance, EventKind::Node, EventKind::SpanStart, EventKind::SpanEnd] {
            let on_entry = on_entry.clone();
            let listener = Listener::new(move |ev: Event| {
                let data = ev.dyn_ref::<MessageEvent>().and_then(|m| m.data().as_string());
                if let Some(entry) = data.and_then(|d| serde_json::from_str::<HistoryEvent>(&d).ok()) {
                    on_entry(entry);
                }
            });
            let _ = source.add_event_listener_with_callback(kind.as_str(), listener.as_ref().unchecked_ref());
            listeners.push(listener);
        }
        let watched = source.clone();
        let on_error = Listener::new(move |_: Event| {
            if watched.ready_state() == EventSource::CLOSED {
                on_broken();
            }
        });
        let _ = source.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref());
        listeners.push(on_error);
        Ok(Stream { source, _listeners: listeners })
    }

    pub fn close(&self) {
        self.source.close();
    }

    /// Open or reconnecting: not closed by us or given up by the browser.
    pub fn is_open(&self) -> bool {
        self.source.ready_state() != EventSource::CLOSED
    }
}

/// Follows the dashboard feed (`GET /api/v1/events`) while the calling component lives. `stale`
/// sees each entry and says whether it changes what the page shows; after one that does, `reread`
/// runs at the next tick of `every` (rereading at most that often while changes pour in), and
/// again at the one after when it answers false (not now: a load is still on the way).
pub fn follow_feed(
    stale: impl Fn(HistoryEvent) -> bool + Clone + 'static,
    every: std::time::Duration,
    reread: impl Fn() -> bool + 'static,
) {
    use leptos::prelude::*;
    let dirty = RwSignal::new(false);
    let mark = move |entry| {
        if stale(entry) {
            dirty.set(true);
        }
    };
    let stream = StoredValue::new_local(Stream::open(&format!("{}/events", crate::urls::API), mark, || {}).ok());
    let tick = set_interval_with_handle(
        move || {
            if dirty.get_untracked() && reread() {
                dirty.set(false);
            }
        },
        every,
    )
    .ok();
    on_cleanup(move || {
        stream.with_value(|s| s.as_ref().map(Stream::close));
        if let Some(h) = tick {
            h.clear();
        }
    });
}
