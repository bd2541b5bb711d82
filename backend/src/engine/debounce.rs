//! `settings.debounce`: a burst of starts of one key (less than `period_ms` apart) makes one
//! instance, with the last start's input, started `period_ms` after the last of them or
//! `max_wait_ms` after the first. Every start of the burst is answered the same instance id
//! (`"debounced": true`); the burst is a row (`store/debounces.rs`) until it is due, so it
//! survives restarts and is shared by every process. `DebounceLoop` (one per process) starts
//! due bursts' instances with their id, under an idempotency key of their own, so a process
//! killed half-way leaves the burst to another and nothing starts twice.

use super::commands::Commands;
use super::error::EngineError;
use super::plan::Plan;
use super::start_keys::StartKeys;
use super::start_request::{StartRequest, Started};
use super::Engine;
use crate::store::{DebounceRow, DebounceStore, NewDebounce};
use chrono::Utc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use trellis_model::InstanceStatus;
use uuid::Uuid;

/// Longest a due burst waits for a process to look (the loop also wakes when this process
/// opens a burst, and sleeps only until the next one is due).
const POLL: Duration = Duration::from_millis(500);

impl Commands {
    /// Folds the start into its key's burst when the workflow debounces starts: its answer.
    /// `limits` is the latest version's plan. Starts by the engine itself (a child, a failure
    /// handler, a burst's own instance) are not debounced.
    pub(super) async fn fold_into_burst(
        &self,
        request: &StartRequest,
        (limits, latest): (&Plan, i64),
        keys: &StartKeys,
    ) -> Result<Option<Started>, EngineError> {
        let Some(debounce) = &limits.debounce else { return Ok(None) };
        if request.burst.is_some() || request.parent.is_some() || request.handles_failure_of.is_some() {
            return Ok(None);
        }
        if request.key.is_some() {
            return Err(EngineError::Invalid(
                "this workflow debounces its starts, which fold into one instance: a start cannot carry a business key"
                    .into(),
            ));
        }
        let start = NewDebounce {
            instance_id: Uuid::now_v7(),
            workflow_id: request.workflow,
            key: keys.debounce.clone().unwrap_or_default(),
            input: request.input.clone(),
            period_ms: debounce.period_ms,
            max_wait_ms: debounce.max_wait_ms,
            rate: keys.rate_check(limits),
            started_by: request.started_by.clone(),
        };
        let folded = match self.debounces.debounce(&start).await? {
            Ok(folded) => folded,
            Err(retry_at) => {
                self.bus.metrics.flow(request.workflow, "rate_limit", "refused", 1);
                let key = start.rate.as_ref().map(|r| r.key.as_str()).filter(|k| !k.is_empty());
                let detail = super::start_keys::rate_limited(limits, key);
                return Err(EngineError::RateLimited { detail, retry_at });
            }
        };
        let outcome = if folded.joined { "folded" } else { "opened" };
        self.bus.metrics.flow(request.workflow, "debounce", outcome, 1);
        self.wakes.debounces.notify_one();
        Ok(Some(Started {
            id: folded.instance_id,
            status: InstanceStatus::Queued,
            version: latest,
            debounced: true,
            repeated: false,
        }))
    }
}

/// Starts the instances of due bursts, in every process.
pub struct DebounceLoop {
    store: Arc<dyn DebounceStore>,
    engine: Arc<Engine>,
    /// How long a claim on a due burst lasts: a process that dies holding one delays it this much.
    lease: chrono::Duration,
}

impl DebounceLoop {
    pub fn new(store: Arc<dyn DebounceStore>, engine: Arc<Engine>, lease: Duration) -> DebounceLoop {
        let lease = chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(30));
        DebounceLoop { store, engine, lease }
    }

    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            if !self.engine.hold().pass(&mut shutdown).await {
                continue;
            }
            self.round().await;
            let wait = match self.store.next_debounce_due().await {
                Ok(Some(due)) => (due - Utc::now()).to_std().unwrap_or_default().min(POLL),
                _ => POLL,
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.engine.commands.wakes.debounces.notified() => {}
                _ = shutdown.changed() => {}
            }
        }
    }

    /// Claims the due bursts and starts each one's instance.
    pub async fn round(&self) {
        let now = Utc::now();
        let due = match self.store.claim_due_debounces(now, now + self.lease).await {
            Ok(due) => due,
            Err(e) => return tracing::warn!(error = %e, "claiming due debounced starts failed; retrying shortly"),
        };
        for burst in due {
            self.start(burst).await;
        }
    }

    async fn start(&self, burst: DebounceRow) {
        let request = StartRequest {
            burst: Some(burst.instance_id),
            started_by: burst.started_by.clone(),
            ..StartRequest::new(burst.workflow_id, burst.input.0)
                .idempotency_key(format!("debounce:{}", burst.instance_id))
        };
        match self.engine.start(request).await {
            Ok(_) => {}
            // Passing trouble: the claim runs out and the burst is started again (the
            // idempotency key makes a start that did commit answer as before).
            Err(
                e @ (EngineError::Store(_)
                | EngineError::Internal(_)
                | EngineError::Unavailable(_)
                | EngineError::Busy(_)),
            ) => {
                return tracing::warn!(error = %e, instance = %burst.instance_id, "starting a debounced burst failed; it will be retried");
            }
            // Refused for good (the workflow archived, the input no longer valid, a full limit
            // under `on_limit: reject`): there is nothing to retry.
            Err(e) => {
                tracing::warn!(error = %e, instance = %burst.instance_id, starts = burst.starts, "a debounced burst's instance was refused")
            }
        }
        if let Err(e) = self.store.finish_debounce(burst.instance_id).await {
            tracing::warn!(error = %e, instance = %burst.instance_id, "could not forget a started burst; it will be answered again");
        }
    }
}
