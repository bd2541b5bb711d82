//! Posting deliveries: the `Sender` loop (every process) and one signed post.
//!
//! Each process leases due deliveries only for the workers it has free, and posts each on
//! its own task under an attempt deadline, so a receiver that hangs holds one worker for at
//! most the deadline and never the others. A lost lease (a process gone) returns the delivery
//! to the queue once it lapses; a process stopping gives its leases back at once, after
//! waiting (up to the drain period) for its posts. An attempt is logged only by the lease holder.

use super::{AlertSettings, MAX_ATTEMPTS};
use crate::http_client::{guarded_client, OutboundPolicy};
use crate::store::{AfterAttempt, AlertAttemptRow, AlertStore, DueAlert};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// How one attempt went: the receiver's status, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

impl Posted {
    pub fn delivered(&self) -> bool {
        self.status_code.is_some_and(|code| (200..300).contains(&code))
    }
}

/// Posts `body` to `url` signed per Standard Webhooks with `secret`, under `policy`.
pub async fn post(
    client: &reqwest::Client,
    policy: &OutboundPolicy,
    (url, secret): (&str, &str),
    message_id: &str,
    body: &str,
    timeout: std::time::Duration,
) -> Posted {
    if let Err(why) = policy.check_url(url).await {
        return Posted { status_code: None, error: Some(why) };
    }
    let timestamp = Utc::now().timestamp();
    let signature = crate::standard_webhooks::sign(secret, message_id, timestamp, body.as_bytes());
    let sent = client
        .post(url)
        .timeout(timeout)
        .header("content-type", "application/json")
        .header("webhook-id", message_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body.to_owned())
        .send()
        .await;
    match sent {
        Ok(answer) => {
            let code = i32::from(answer.status().as_u16());
            let error = (!answer.status().is_success()).then(|| format!("the receiver answered {}", answer.status()));
            Posted { status_code: Some(code), error }
        }
        Err(e) if e.is_timeout() => {
            Posted { status_code: None, error: Some(format!("no answer within {} ms", timeout.as_millis())) }
        }
        Err(e) => Posted { status_code: None, error: Some(format!("could not post: {}", error_chain(&e))) },
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The `webhook-id` of a delivery: the same on every attempt, so a receiver can dedupe.
pub fn message_id(delivery: uuid::Uuid) -> String {
    format!("msg_{}", delivery.simple())
}

/// When the attempt after `attempt` (1-based) is due: `backoff` doubled per attempt, at most
/// an hour; `None` once `MAX_ATTEMPTS` are used.
pub fn next_attempt(attempt: i32, backoff: std::time::Duration, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if attempt >= MAX_ATTEMPTS {
        return None;
    }
    let factor = 1u32 << (attempt - 1).clamp(0, 20);
    let wait = backoff.saturating_mul(factor).min(std::time::Duration::from_secs(3600));
    Some(now + chrono::Duration::from_std(wait).unwrap_or_default())
}

/// Leases and posts due deliveries, until shutdown.
pub struct Sender {
    store: Arc<dyn AlertStore>,
    client: reqwest::Client,
    policy: Arc<OutboundPolicy>,
    settings: AlertSettings,
    owner: String,
    workers: Arc<Semaphore>,
    hold: crate::cluster::Hold,
}

impl Sender {
    pub fn new(store: Arc<dyn AlertStore>, policy: OutboundPolicy, settings: AlertSettings) -> Sender {
        let policy = Arc::new(policy);
        Sender {
            store,
            client: guarded_client(policy.clone()),
            policy,
            settings,
            owner: format!("alerts-{}", uuid::Uuid::now_v7()),
            workers: Arc::new(Semaphore::new(settings.concurrency.max(1))),
            hold: Default::default(),
        }
    }

    /// Sends nothing while `hold` is held (a restored copy must not repeat the original's alerts).
    pub fn held_by(self, hold: crate::cluster::Hold) -> Sender {
        Sender { hold, ..self }
    }

    /// Sends until `shutdown`; then waits up to `drain` for the posts in flight, and gives
    /// back the leases of the deliveries still pending (those cut off, and any claimed but not
    /// logged) so another process sends them at once rather than when the lease lapses.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>, drain: std::time::Duration) {
        let this = Arc::new(self);
        let mut posting = JoinSet::new();
        while !*shutdown.borrow() {
            if !this.hold.pass(&mut shutdown).await {
                continue;
            }
            while posting.try_join_next().is_some() {}
            if let Err(e) = this.clone().round(&mut posting).await {
                tracing::warn!(error = %e, "claiming alert deliveries failed; trying again next round");
            }
            tokio::select! {
                _ = tokio::time::sleep(this.settings.every) => {}
                _ = shutdown.changed() => {}
            }
        }
        let all_done = async { while posting.join_next().await.is_some() {} };
        if tokio::time::timeout(drain, all_done).await.is_err() {
            tracing::warn!(cut_off = posting.len(), "alert posts still in flight at the drain deadline; stopping them");
            posting.shutdown().await;
        }
        match this.store.release_alert_leases(&this.owner).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(released = n, "gave back the leases of unsent alert deliveries"),
            Err(e) => tracing::warn!(error = %e, "could not give back alert delivery leases; they lapse on their own"),
        }
    }

    /// Leases as many due deliveries as there are free workers and starts posting them.
    async fn round(self: Arc<Self>, posting: &mut JoinSet<()>) -> crate::store::Result<()> {
        let free = self.workers.available_permits();
        if free == 0 {
            return Ok(());
        }
        let now = Utc::now();
        let lease =
            chrono::Duration::from_std(self.settings.timeout).unwrap_or_default() + chrono::Duration::seconds(30);
        let due = self.store.claim_deliveries(&self.owner, now, now + lease, free as i64).await?;
        for delivery in due {
            let Ok(permit) = self.workers.clone().try_acquire_owned() else { break };
            let this = self.clone();
            posting.spawn(async move {
                this.deliver(delivery).await;
                drop(permit);
            });
        }
        Ok(())
    }

    async fn deliver(&self, d: DueAlert) {
        let attempt = d.attempts + 1;
        let target = (d.url.as_str(), d.secret.as_str());
        let posted = post(&self.client, &self.policy, target, &message_id(d.id), &d.body, self.settings.timeout).await;
        let at = Utc::now();
        let after = if posted.delivered() {
            AfterAttempt::Delivered
        } else {
            next_attempt(attempt, self.settings.backoff, at).map_or(AfterAttempt::GaveUp, AfterAttempt::RetryAt)
        };
        let row =
            AlertAttemptRow { delivery_id: d.id, attempt, at, status_code: posted.status_code, error: posted.error };
        match self.store.finish_attempt(&row, &self.owner, after).await {
            Ok(true) => {}
            Ok(false) => self.not_logged(&d).await,
            Err(e) => {
                tracing::warn!(delivery = %d.id, error = %e, "logging an alert attempt failed; it will be retried")
            }
        }
    }
}

impl Sender {
    /// Why an attempt could not be logged: its rule (and with it the delivery) was deleted
    /// while it was posted, or the lease lapsed and another process owns the delivery now.
    async fn not_logged(&self, d: &DueAlert) {
        match self.store.alert_rule(d.rule_id).await {
            Ok(None) => {
                tracing::info!(delivery = %d.id, rule = %d.rule_id, "alert rule deleted while its delivery was posted; attempt not logged")
            }
            Ok(Some(_)) => {
                tracing::warn!(delivery = %d.id, "an alert delivery's lease lapsed before its attempt was logged")
            }
            Err(e) => tracing::warn!(delivery = %d.id, error = %e, "an alert attempt was not logged"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_back_off_exponentially_then_stop() {
        let now = Utc::now();
        let base = std::time::Duration::from_millis(1_000);
        let waits: Vec<i64> =
            (1..MAX_ATTEMPTS).map(|a| (next_attempt(a, base, now).unwrap() - now).num_milliseconds()).collect();
        assert_eq!(waits, [1_000, 2_000, 4_000, 8_000]);
        assert_eq!(next_attempt(MAX_ATTEMPTS, base, now), None);
    }

    #[test]
    fn only_a_2xx_is_delivered() {
        assert!(Posted { status_code: Some(204), error: None }.delivered());
        assert!(!Posted { status_code: Some(500), error: Some("x".into()) }.delivered());
        assert!(!Posted { status_code: None, error: Some("timeout".into()) }.delivered());
    }
}
