//! Broker triggers: every process runs one [`BrokerLoop`], which keeps one consumer per
//! unpaused `nats`, `amqp` and `mqtt` trigger (restarted when its settings change, stopped
//! when it is paused or deleted, none while the database is held). A consumer connects,
//! takes messages in batches past the back-pressure gate, starts their instances and
//! acknowledges them (`ingest.rs`); a connection that fails is reported `disconnected` with
//! why, and tried again with a growing backoff (0.5 s to 30 s).
//!
//! * `spec.rs`: the kinds' settings; `message.rs`: a message, its default input and key.
//! * `session.rs`: what a consumer shares across kinds (URL with secrets, gate, reports).
//! * `nats.rs`, `amqp.rs`, `mqtt.rs`: each broker's connection, batches and acknowledgements.

pub mod amqp;
pub mod ingest;
pub mod message;
pub mod mqtt;
pub mod nats;
pub mod session;
pub mod spec;

use crate::engine::Engine;
use crate::store::{DynStore, TriggerRow};
use crate::triggers::TriggerSpec;
use chrono::{DateTime, Utc};
use ingest::Ingest;
use session::Session;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// How often the loop reads which broker triggers exist: how late a new, changed, paused or
/// resumed trigger is seen by this process.
const LOOK_EVERY: Duration = Duration::from_millis(500);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long a consumer told to stop may take to finish its batch.
const STOP_WITHIN: Duration = Duration::from_secs(15);

pub struct BrokerLoop {
    store: DynStore,
    engine: Arc<Engine>,
    /// This process's stable name (see `Session::node`).
    node: String,
    running: HashMap<Uuid, Running>,
}

/// One trigger's consumer task.
struct Running {
    /// The trigger's `updated_at` when started: a change restarts it.
    version: DateTime<Utc>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl BrokerLoop {
    /// `node`: a name that stays the same when this process restarts on the same host and
    /// port.
    pub fn new(store: DynStore, engine: Arc<Engine>, node: String) -> BrokerLoop {
        BrokerLoop { store, engine, node, running: HashMap::new() }
    }

    /// Keeps the consumers in step with the triggers until `shutdown`; then stops each (a
    /// consumer finishes the batch it took, acknowledges it, and disconnects).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            if self.engine.hold().is_held() {
                self.stop_all().await;
                self.engine.hold().wait_released(&mut shutdown).await;
                continue;
            }
            self.round().await;
            tokio::select! {
                _ = tokio::time::sleep(LOOK_EVERY) => {}
                _ = shutdown.changed() => {}
            }
        }
        self.stop_all().await;
    }

    async fn round(&mut self) {
        let triggers = match self.store.list_broker_triggers().await {
            Ok(triggers) => triggers,
            Err(e) => {
                tracing::debug!(error = %e, "could not list broker triggers; looking again");
                return;
            }
        };
        let wanted: HashMap<Uuid, &TriggerRow> = triggers.iter().filter(|t| !t.paused).map(|t| (t.id, t)).collect();
        // Changed, paused or deleted triggers' consumers stop; one that ended by itself (it
        // should not: it panicked) is started again below.
        let gone: Vec<Uuid> = self
            .running
            .iter()
            .filter(|(id, r)| r.task.is_finished() || wanted.get(id).is_none_or(|t| t.updated_at != r.version))
            .map(|(id, _)| *id)
            .collect();
        let stopping: Vec<Running> = gone.iter().filter_map(|id| self.running.remove(id)).collect();
        stop_together(stopping).await;
        self.report_paused(triggers.iter().filter(|t| t.paused)).await;
        for (id, trigger) in wanted {
            if !self.running.contains_key(&id) {
                self.start(trigger.clone());
            }
        }
    }

    fn start(&mut self, trigger: TriggerRow) {
        let spec = match TriggerSpec::from_stored(&trigger.spec.0) {
            Ok(spec) => spec,
            Err(e) => {
                tracing::error!(trigger = %trigger.id, error = %e, "a broker trigger's settings do not parse");
                return;
            }
        };
        let (stop, stopped) = watch::channel(false);
        let ingest = Ingest {
            store: self.store.clone(),
            engine: self.engine.clone(),
            trigger: trigger.id,
            workflow: trigger.workflow_id,
        };
        let version = trigger.updated_at;
        let id = trigger.id;
        let session = Session::new(trigger, spec, ingest, self.node.clone(), stopped);
        let task = tokio::spawn(consume(session));
        self.running.insert(id, Running { version, stop, task });
    }

    /// Records `paused` for paused triggers whose last report says otherwise.
    async fn report_paused<'a>(&self, paused: impl Iterator<Item = &'a TriggerRow>) {
        let paused: Vec<&TriggerRow> = paused.collect();
        if paused.is_empty() {
            return;
        }
        let Ok(reports) = self.store.consumer_reports().await else { return };
        for trigger in paused {
            if reports.iter().any(|r| r.trigger_id == trigger.id && r.state == "paused") {
                continue;
            }
            let row = crate::store::ConsumerRow::now(trigger.id, "paused", Some("the trigger is paused".into()), None);
            let _ = self.store.report_consumer(&row).await;
        }
    }

    async fn stop_all(&mut self) {
        stop_together(self.running.drain().map(|(_, running)| running).collect()).await;
    }
}

/// Tells the consumers to stop and waits for them together: each finishes the batch it took;
/// one still not done after `STOP_WITHIN` (stuck connecting, say) is cut off, so no consumer
/// holds up the others or a shutdown.
async fn stop_together(stopping: Vec<Running>) {
    for running in &stopping {
        let _ = running.stop.send(true);
    }
    let waits = stopping.into_iter().map(|running| async move {
        let mut task = running.task;
        if tokio::time::timeout(STOP_WITHIN, &mut task).await.is_err() {
            task.abort();
        }
    });
    futures_util::future::join_all(waits).await;
}

/// One trigger's consumer: sessions one after another, with a growing pause after each
/// that failed, until told to stop.
async fn consume(mut session: Session) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let spec = session.spec.clone();
        let ended = match &spec {
            TriggerSpec::Nats(s) => nats::consume(&mut session, s).await,
            TriggerSpec::Amqp(s) => amqp::consume(&mut session, s).await,
            TriggerSpec::Mqtt(s) => mqtt::consume(&mut session, s).await,
            TriggerSpec::Webhook(_) | TriggerSpec::Cron(_) => return,
        };
        match ended {
            Ok(()) => return,
            Err(why) => {
                session.report("disconnected", Some(why), None).await;
                if session.sleep(backoff).await {
                    return;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Tries the settings at save: connects (within a few seconds), opens the stream and
/// consumer or the queue, and says what failed. The URL's secrets are filled in as a
/// consumer would.
pub async fn probe(store: DynStore, engine: Arc<Engine>, trigger: TriggerRow, spec: TriggerSpec) -> Result<(), String> {
    let ingest = Ingest { store, engine, trigger: trigger.id, workflow: trigger.workflow_id };
    let (_stop, stopped) = watch::channel(false);
    let mut session = Session::new(trigger, spec.clone(), ingest, String::new(), stopped);
    let url = session.url().await?;
    let tried = match &spec {
        TriggerSpec::Nats(s) => nats::open(s, &url, session.trigger.id).await.map(|_| ()),
        TriggerSpec::Amqp(s) => amqp::open(s, &url).await.map(|(connection, _, _)| {
            tokio::spawn(async move { connection.close(200, "checked".into()).await });
        }),
        TriggerSpec::Mqtt(_) => {
            // A clean session: the check leaves nothing behind on the broker.
            let mut options =
                mqtt::options(&url, &format!("trellis-check-{}", &Uuid::now_v7().simple().to_string()[20..]))?;
            options.set_clean_session(true);
            mqtt::connect(options).await.map(|(client, _events)| {
                tokio::spawn(async move { client.disconnect().await });
            })
        }
        TriggerSpec::Webhook(_) | TriggerSpec::Cron(_) => Ok(()),
    };
    tried.map_err(|why: String| session.redactor.text(&why).into_owned())
}
