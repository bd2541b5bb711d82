//! The run view's state, shared by its parts through context: the folded history, the instance
//! as `GET /instances/{id}` has it (timestamps, input, output, node outputs), the version's
//! graph, and the clock that makes open spans grow.

use crate::api;
use crate::components::run::stream::Stream;
use crate::components::session::{use_session, Session};
use crate::run::batch::Batch;
use crate::run::retry_preview::will_run_again;
use crate::run::{graph, RunState};
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::BTreeSet;
use trellis_model::api::InstanceDetail;
use trellis_model::trace::EventKind;
use trellis_model::{Definition, InstanceStatus};

#[derive(Clone, Copy)]
pub struct RunView {
    pub id: StoredValue<String>,
    pub run: RwSignal<RunState>,
    pub detail: RwSignal<Option<InstanceDetail>>,
    /// The instance's version of the workflow, every node placed.
    pub definition: RwSignal<Option<Definition>>,
    /// The version `definition` was read for: a retry onto a newer version changes the graph.
    graph_version: StoredValue<Option<i64>>,
    pub now: RwSignal<DateTime<Utc>>,
    pub error: RwSignal<Option<String>>,
    /// The server knows no instance by this id: the page says so instead of an empty run.
    pub missing: RwSignal<bool>,
    pub session: Session,
    /// The span whose details are shown.
    pub selected: RwSignal<Option<String>>,
    /// Whether a retry may be offered now (by status and role), as the actions decided.
    pub can_retry: RwSignal<bool>,
    /// The open retry's `from` (`failed`, `start` or a node id); `None` while no retry is open.
    pub retry: RwSignal<Option<String>>,
    /// The node last clicked on the graph.
    pub picked: RwSignal<Option<String>>,
    /// The latest published version (number and graph) while the open retry is to move onto
    /// it: the engine maps the run's node statuses onto that graph by id, so the preview must too.
    pub retry_onto: RwSignal<Option<(i64, Definition)>>,
    /// The nodes the open retry would run again, highlighted on the graph.
    pub rerun: Memo<BTreeSet<String>>,
    fetching: RwSignal<bool>,
    again: RwSignal<bool>,
    stream: StoredValue<Option<Stream>, LocalStorage>,
    /// Entries received since the last frame, applied together at the next one.
    batch: StoredValue<Batch>,
    /// The dashboard feed, followed once the instance has finished, so a retry made elsewhere
    /// (another tab, the API, a bulk job) brings the page back to life.
    revival: StoredValue<Option<Stream>, LocalStorage>,
}

/// The browser's clock (chrono's clock does not reach the browser's on wasm32).
pub fn browser_now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
}

impl RunView {
    /// The run view of instance `id`, for the signed-in session.
    pub fn new(id: String) -> Self {
        let session = use_session();
        let run = RwSignal::new(RunState::default());
        let definition = RwSignal::new(None::<Definition>);
        let can_retry = RwSignal::new(false);
        let retry = RwSignal::new(None::<String>);
        let retry_onto = RwSignal::new(None::<(i64, Definition)>);
        let rerun = Memo::new(move |_| {
            let Some(from) = retry.get().filter(|_| can_retry.get()) else { return BTreeSet::new() };
            let (onto, drawn) = (retry_onto.read(), definition.read());
            match onto.as_ref().map(|(_, d)| d).or(drawn.as_ref()) {
                Some(d) => run.with(|r| will_run_again(d, r, &from)),
                None => BTreeSet::new(),
            }
        });
        RunView {
            can_retry,
            retry,
            retry_onto,
            picked: RwSignal::new(None),
            rerun,
            id: StoredValue::new(id),
            run,
            detail: RwSignal::new(None),
            definition,
            graph_version: StoredValue::new(None),
            now: RwSignal::new(browser_now()),
            error: RwSignal::new(None),
            missing: RwSignal::new(false),
            session,
            selected: RwSignal::new(None),
            fetching: RwSignal::new(false),
            again: RwSignal::new(false),
            stream: StoredValue::new_local(None),
            batch: StoredValue::new(Batch::default()),
            revival: StoredValue::new_local(None),
        }
    }

    /// Loads the instance, then its version's graph, and follows its history.
    pub fn start(self) {
        self.refresh();
        self.follow();
    }

    /// Whether the page was left (its signals disposed) while a request was out: a 401 sends the
    /// app to sign-in before the answer arrives, and touching a disposed signal panics.
    fn left(self) -> bool {
        self.fetching.is_disposed()
    }

    /// Rereads `GET /instances/{id}`; a call while one is in flight reads once more after it.
    pub fn refresh(self) {
        if self.fetching.get_untracked() {
            self.again.set(true);
            return;
        }
        self.fetching.set(true);
        let id = self.id.get_value();
        spawn_local(async move {
            let answer = api::get_instance(&id).await;
            if self.left() {
                return;
            }
            match answer {
                Ok(d) => {
                    let graph = (self.graph_version.get_value() != Some(d.summary.version))
                        .then(|| (d.summary.workflow_id.clone(), d.summary.version));
                    let status = d.summary.status.to_string();
                    let ended =
                        self.run.with_untracked(|r| r.is_terminal() && r.status.as_deref() == Some(status.as_str()));
                    self.detail.set(Some(d));
                    if ended {
                        self.close();
                        self.await_revival();
                    }
                    // Awaited while `fetching` holds, so a refresh meanwhile cannot fetch it again.
                    if let Some((workflow, version)) = graph {
                        self.load_definition(workflow, version).await;
                        if self.left() {
                            return;
                        }
                    }
                }
                Err(err) if err.is_not_found() && self.detail.with_untracked(Option::is_none) => {
                    self.missing.set(true);
                    self.leave();
                }
                Err(err) => self.error.set(Some(err.message())),
            }
            self.fetching.set(false);
            if self.again.get_untracked() {
                self.again.set(false);
                self.refresh();
            }
        });
    }

    async fn load_definition(self, workflow: String, version: i64) {
        let answer = api::get_version(&workflow, version).await;
        if self.left() {
            return;
        }
        match answer {
            Ok(v) => {
                self.graph_version.set_value(Some(version));
                self.definition.set(Some(graph::placed(&v.definition)));
            }
            Err(err) => self.error.set(Some(err.message())),
        }
    }

    /// After a retry the instance lives again: its history is read anew from the start (the
    /// stream closed when it finished), and the instance (maybe on a newer version) reread.
    pub fn restart(self) {
        self.close();
        self.stop_awaiting_revival();
        // Entries of the old stream not yet applied belong to the history read anew.
        self.batch.update_value(|b| drop(b.take()));
        self.run.set(RunState::default());
        self.retry.set(None);
        self.retry_onto.set(None);
        self.picked.set(None);
        self.error.set(None);
        self.follow();
        self.refresh();
    }

    fn follow(self) {
        let id = self.id.get_value();
        let on_entry = move |entry: trellis_model::trace::HistoryEvent| {
            let mut first = false;
            self.batch.update_value(|b| first = b.push(entry));
            if first {
                request_animation_frame(move || self.flush());
            }
        };
        let on_broken = move || {
            if !self.run.with_untracked(RunState::is_terminal) {
                self.error.set(Some("Live updates stopped; reload the page to follow the run again.".into()));
                self.refresh();
            }
        };
        match Stream::open(&crate::urls::instance_events(&id), on_entry, on_broken) {
            Ok(stream) => self.stream.set_value(Some(stream)),
            Err(message) => self.error.set(Some(message)),
        }
    }

    /// Applies the entries received since the last frame with one update of the run, so a
    /// catch-up of thousands of entries renders once rather than once per entry.
    fn flush(self) {
        if self.left() {
            return;
        }
        let entries = self.batch.try_update_value(Batch::take).unwrap_or_default();
        let is_status = entries.iter().any(|e| matches!(e.kind(), Some(EventKind::Instance | EventKind::Node)));
        // No closing on a terminal entry here: a replay after a retry passes the old end on its
        // way to the new run. `refresh` closes once the history agrees with the instance.
        self.run.update(|r| {
            for entry in &entries {
                r.apply(entry);
            }
        });
        // Node outputs, timestamps and the instance's output come from the instance itself.
        if is_status {
            self.refresh();
        }
    }

    /// Follows the dashboard feed until this instance runs or queues again, then restarts.
    fn await_revival(self) {
        if self.revival.with_value(|s| s.as_ref().is_some_and(Stream::is_open)) {
            return;
        }
        let id = self.id.get_value();
        let on_entry = move |entry: trellis_model::trace::HistoryEvent| {
            let status = entry.data.get("status").and_then(|v| v.as_str()).and_then(InstanceStatus::parse);
            if entry.instance_id == id && status.is_some_and(|s| !s.is_terminal()) {
                self.restart();
            }
        };
        match Stream::open(&format!("{}/events", crate::urls::API), on_entry, || {}) {
            Ok(stream) => self.revival.set_value(Some(stream)),
            // The page still works; only a retry made elsewhere goes unnoticed until a reload.
            Err(message) => leptos::logging::warn!("{message}"),
        }
    }

    /// Closed but kept: this may run inside the feed's own listener, which must outlive the call.
    fn stop_awaiting_revival(self) {
        self.revival.with_value(|s| {
            if let Some(s) = s {
                s.close();
            }
        });
    }

    /// Stops following. The stream (and its listeners, one of which may be running this) stays
    /// stored until the page goes.
    pub fn close(self) {
        self.stream.with_value(|s| {
            if let Some(s) = s {
                s.close();
            }
        });
    }

    /// Stops every stream: the page is going.
    pub fn leave(self) {
        self.close();
        self.stop_awaiting_revival();
    }
}
