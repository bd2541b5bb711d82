//! What one consumer of one broker trigger shares across the kinds: the trigger's URL with
//! its secrets filled in (and the redactor that keeps them out of every report), the
//! back-pressure gate before each batch, and the reports of its state.

use super::ingest::{Handled, Ingest};
use super::message::Message;
use super::spec::Broker;
use crate::sandbox::Job;
use crate::secrets::Redactor;
use crate::store::{ConsumerRow, TriggerRow};
use crate::triggers::TriggerSpec;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::watch;
use trellis_model::config::NodeKind;

/// How often a consumer whose workflow's queue is full looks again.
const FULL_QUEUE_LOOK: Duration = Duration::from_millis(250);
/// The longest wait after batches the server could not start.
const MAX_ERROR_WAIT: Duration = Duration::from_secs(30);
/// A state written again after this long even if unchanged, so a report shows it is current.
const REPORT_AGAIN: Duration = Duration::from_secs(30);

pub struct Session {
    pub trigger: TriggerRow,
    pub spec: TriggerSpec,
    pub ingest: Ingest,
    /// This process's stable name (the same after a restart on the same host and port), for
    /// client ids that must survive a restart (MQTT's persistent session).
    pub node: String,
    pub stop: watch::Receiver<bool>,
    /// Until when a rate limit refused starts.
    paused_until: Option<DateTime<Utc>>,
    /// After a batch the server could not start (some `error`): how long it waits before the
    /// next, growing while batches keep failing, and why.
    error_backoff: Option<(Duration, String)>,
    last_report: Option<(String, Option<String>, std::time::Instant)>,
    pub redactor: Redactor,
}

impl Session {
    pub fn new(
        trigger: TriggerRow,
        spec: TriggerSpec,
        ingest: Ingest,
        node: String,
        stop: watch::Receiver<bool>,
    ) -> Session {
        Session {
            trigger,
            spec,
            ingest,
            node,
            stop,
            paused_until: None,
            error_backoff: None,
            last_report: None,
            redactor: Redactor::default(),
        }
    }

    pub fn broker(&self) -> Broker<'_> {
        self.spec.broker().expect("a session runs broker triggers only")
    }

    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Sleeps `wait`, or less if told to stop; true if told to stop.
    pub async fn sleep(&mut self, wait: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = self.stop.wait_for(|stop| *stop) => {}
        }
        self.stopping()
    }

    /// The URL to connect to, its `{{ secret.NAME }}` references filled in (in the sandbox,
    /// as every template is); the values are kept for redacting what the client says.
    pub async fn url(&mut self) -> Result<String, String> {
        let url = self.broker().url.to_owned();
        if !url.contains("{{") {
            self.redactor = redactor_of_password(&url, []);
            return Ok(url);
        }
        let names = trellis_model::secret::node_references(NodeKind::Http, &json!({"url": url}))
            .map_err(|bad| bad.into_iter().map(|b| b.message).collect::<Vec<_>>().join("; "))?;
        let names: Vec<String> = names.into_iter().collect();
        let opened = self.ingest.engine.secrets().open_for_attempt(&names).await.map_err(|e| e.to_string())?;
        let rendered = self
            .ingest
            .engine
            .sandbox()
            .evaluate_with_secrets(vec![Job::Render(Value::String(url))], &json!({}), &opened, None)
            .await;
        let redactor = opened.redactor();
        let url = match rendered {
            Ok(Ok(mut values)) => match values.pop() {
                Some(Value::String(url)) => url,
                _ => return Err("the `url` template did not give a text".into()),
            },
            Ok(Err(e)) => return Err(format!("the `url` template failed: {}", redactor.text(&e))),
            Err(stopped) => return Err(format!("the `url` template could not be rendered now: {stopped}")),
        };
        let secrets = opened.values.iter().map(|(n, v)| (n.as_str(), secrecy::ExposeSecret::expose_secret(v)));
        self.redactor = redactor_of_password(&url, secrets);
        Ok(url)
    }

    /// Waits until the trigger may take messages: no rate limit's refusal pending, and the
    /// workflow's queue at most `max_queued`. False if told to stop meanwhile.
    pub async fn gate(&mut self) -> bool {
        loop {
            if self.stopping() {
                return false;
            }
            if let Some((wait, why)) = self.error_backoff.clone() {
                let reason =
                    format!("the last messages could not be started ({why}); trying again in {} s", wait.as_secs());
                self.report("paused", Some(reason), None).await;
                if self.sleep(wait).await {
                    return false;
                }
                // Stays set until a batch goes through: the next failure waits longer.
                self.error_backoff = Some((wait, why));
                return true;
            }
            if let Some(until) = self.paused_until.filter(|until| *until > Utc::now()) {
                let reason =
                    format!("the workflow's rate limit refuses starts until {}", until.format("%H:%M:%S%.3f UTC"));
                self.report("paused", Some(reason), None).await;
                let wait = (until - Utc::now()).to_std().unwrap_or_default();
                if self.sleep(wait).await {
                    return false;
                }
                continue;
            }
            let max = i64::from(self.broker().max_queued);
            match self.ingest.store.queued_instances(self.trigger.workflow_id).await {
                Ok(queued) if queued > max => {
                    let reason = format!("the workflow has {queued} queued instances (more than max_queued {max})");
                    self.report("paused", Some(reason), None).await;
                    if self.sleep(FULL_QUEUE_LOOK).await {
                        return false;
                    }
                }
                Ok(_) => {
                    self.report("connected", None, None).await;
                    return true;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "could not count a workflow's queue; looking again");
                    if self.sleep(FULL_QUEUE_LOOK).await {
                        return false;
                    }
                }
            }
        }
    }

    /// Handles a batch: the answers in order; a rate limit's refusal pauses the session.
    pub async fn handle(&mut self, messages: &[Message]) -> Vec<Handled> {
        let broker = self.broker();
        let handled = self.ingest.handle(broker, messages).await;
        if let Some(until) = handled.iter().filter_map(|h| h.retry_at).max() {
            self.paused_until = Some(until);
        }
        self.error_backoff = match handled.iter().find(|h| !h.ack()) {
            None => None,
            Some(failed) => {
                let wait =
                    self.error_backoff.as_ref().map_or(Duration::from_secs(1), |(w, _)| (*w * 2).min(MAX_ERROR_WAIT));
                Some((wait, failed.reason.clone().unwrap_or_default()))
            }
        };
        handled
    }

    /// Records the consumer's state when it changes (and every 30 s while it does not).
    pub async fn report(&mut self, state: &str, reason: Option<String>, lag: Option<i64>) {
        let reason = reason.map(|r| self.redactor.text(&r).into_owned());
        let same = self
            .last_report
            .as_ref()
            .is_some_and(|(s, r, at)| s == state && *r == reason && at.elapsed() < REPORT_AGAIN && lag.is_none());
        if same {
            return;
        }
        let row = ConsumerRow::now(self.trigger.id, state, reason.clone(), lag);
        if let Err(e) = self.ingest.store.report_consumer(&row).await {
            tracing::debug!(error = %e, trigger = %self.trigger.id, "could not record a consumer's state");
            return;
        }
        if state == "disconnected" {
            tracing::warn!(trigger = %self.trigger.id, reason = reason.as_deref().unwrap_or(""), "broker trigger disconnected");
        }
        self.last_report = Some((state.to_owned(), reason, std::time::Instant::now()));
    }
}

/// A redactor of the secrets a URL was filled with and of the credential it carries, so no
/// client error quoting the URL writes either.
fn redactor_of_password<'a>(url: &str, secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Redactor {
    let credential = url::Url::parse(url).ok().and_then(|u| url_credential(&u));
    let credential = credential.as_ref().map(|c| match c {
        Credential::Password(p) => ("url_password", p.as_str()),
        Credential::Token(t) => ("url_token", t.as_str()),
    });
    let mut pairs: Vec<(&str, &str)> = secrets.into_iter().collect();
    pairs.extend(credential);
    Redactor::new(pairs)
}

/// What in a broker URL is secret: its password, or a user name with no password (a token,
/// `nats://TOKEN@host`).
#[derive(Debug, Clone, PartialEq)]
pub enum Credential {
    Password(String),
    Token(String),
}

pub fn url_credential(url: &url::Url) -> Option<Credential> {
    match url.password().filter(|p| !p.is_empty()) {
        Some(password) => Some(Credential::Password(password.to_owned())),
        None => Some(url.username()).filter(|t| !t.is_empty()).map(|t| Credential::Token(t.to_owned())),
    }
}

/// A batch's messages, and why the connection failed if an item says so (the messages taken
/// before it are still handled and acknowledged).
pub fn split_taken<T, E: std::fmt::Display>(batch: Vec<Result<T, E>>, from: &str) -> (Vec<T>, Option<String>) {
    let mut taken = Vec::with_capacity(batch.len());
    let mut failure = None;
    for item in batch {
        match item {
            Ok(message) => taken.push(message),
            Err(e) => failure = Some(format!("{from} failed: {e}")),
        }
    }
    (taken, failure)
}

/// What [`gather`] took.
pub enum Gathered<T> {
    /// At least one item.
    Batch(Vec<T>),
    /// Nothing arrived within the look period: time for a lag report.
    Idle,
    /// The stream ended (the connection went away).
    Ended,
    Stopped,
}

/// Waits for the first item (up to `look`), then takes whatever else is ready at once, up to
/// `max`: one message alone goes without delay, a fast producer's come in batches.
pub async fn gather<S, T>(stream: &mut S, max: usize, look: Duration, stop: &mut watch::Receiver<bool>) -> Gathered<T>
where
    S: futures_util::Stream<Item = T> + Unpin,
{
    use futures_util::{FutureExt, StreamExt};
    let first = tokio::select! {
        first = tokio::time::timeout(look, stream.next()) => first,
        _ = stop.wait_for(|stop| *stop) => return Gathered::Stopped,
    };
    let first = match first {
        Err(_) => return Gathered::Idle,
        Ok(None) => return Gathered::Ended,
        Ok(Some(first)) => first,
    };
    let mut batch = vec![first];
    while batch.len() < max {
        match stream.next().now_or_never() {
            Some(Some(item)) => batch.push(item),
            _ => break,
        }
    }
    Gathered::Batch(batch)
}
