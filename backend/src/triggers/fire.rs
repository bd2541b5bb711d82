//! The fire loop: every process runs one. It leases due cron schedules (`SKIP_LOCKED` on
//! Postgres, so processes split them), starts an instance per tick and moves the schedule on.
//!
//! Exactly once per tick, across processes and crashes: a tick's start carries the
//! idempotency key `cron:{trigger}:{tick}`, which the engine records in the same transaction
//! as the instance. A process that dies after starting but before moving the schedule on
//! leaves the lease to expire; whoever fires the tick again gets the same instance back.

use super::schedule::{plan, Schedule};
use super::spec::{CronSpec, Overlap, TriggerSpec};
use crate::engine::{Engine, EngineError, StartRequest};
use crate::store::{DeliveryRow, FireDone, TriggerRow, TriggerStore};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::watch;
use trellis_model::DeliveryOutcome;
use uuid::Uuid;

/// Schedules leased per round.
const BATCH: i64 = 16;
/// Longest sleep between rounds: how late a schedule created or resumed elsewhere is seen.
const MAX_IDLE: std::time::Duration = std::time::Duration::from_millis(500);
/// Shortest sleep between rounds that claimed nothing, so a tick another process is firing
/// right now is not polled for in a tight loop.
const MIN_IDLE: std::time::Duration = std::time::Duration::from_millis(20);
const PURGE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
/// How long the delivery log is kept.
pub fn log_retention() -> Duration {
    Duration::days(7)
}

pub struct FireLoop {
    store: Arc<dyn TriggerStore>,
    engine: Arc<Engine>,
    /// This process's identity in schedule leases.
    owner: String,
    /// How long a lease on a schedule lasts (`TRELLIS_LEASE_MS`, like work items): a process
    /// that dies holding one delays that schedule's ticks by at most this.
    lease: Duration,
}

/// Why a claim stops before moving its schedule on: the lease runs out and the ticks are
/// fired again (the same instances come back), so nothing is lost or doubled.
struct Retry(String);

impl FireLoop {
    pub fn new(store: Arc<dyn TriggerStore>, engine: Arc<Engine>, lease: std::time::Duration) -> FireLoop {
        let lease = Duration::from_std(lease).unwrap_or(Duration::seconds(30));
        FireLoop { store, engine, owner: format!("fire-{}", Uuid::now_v7()), lease }
    }

    /// Fires due schedules until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut last_purge: Option<tokio::time::Instant> = None;
        while !*shutdown.borrow() {
            if !self.engine.hold().pass(&mut shutdown).await {
                continue;
            }
            if last_purge.is_none_or(|t| t.elapsed() >= PURGE_EVERY) {
                self.purge().await;
                last_purge = Some(tokio::time::Instant::now());
            }
            if self.round().await >= BATCH as usize {
                continue;
            }
            let wait = self.idle_wait().await;
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => {}
            }
        }
    }

    /// Leases the due schedules and fires each; returns how many were leased.
    pub async fn round(&self) -> usize {
        let now = Utc::now();
        let claimed = match self.store.claim_due_triggers(&self.owner, now, now + self.lease, BATCH).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "claiming due schedules failed; retrying shortly");
                return 0;
            }
        };
        let n = claimed.len();
        for trigger in claimed {
            match self.fire(&trigger, now).await {
                Ok(done) => {
                    if let Err(e) = self.store.finish_fire(&done).await {
                        tracing::warn!(error = %e, trigger = %trigger.id, "could not move a schedule on; its lease will expire");
                    }
                }
                Err(Retry(why)) => {
                    tracing::warn!(trigger = %trigger.id, error = %why, "firing a schedule failed; it will be retried")
                }
            }
        }
        n
    }

    async fn idle_wait(&self) -> std::time::Duration {
        let now = Utc::now();
        match self.store.next_trigger_due(now).await {
            Ok(Some(due)) => (due - now).to_std().unwrap_or(MIN_IDLE).clamp(MIN_IDLE, MAX_IDLE),
            _ => MAX_IDLE,
        }
    }

    async fn purge(&self) {
        match self.store.purge_trigger_history(Utc::now() - log_retention()).await {
            Ok(n) if n > 0 => tracing::info!(deleted = n, "purged old trigger deliveries"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purging old trigger deliveries failed"),
        }
    }

    /// Fires what was due of one leased schedule when it was claimed (`now`), and says where
    /// it goes next. Planning from the claim's time, not the clock's, means a pause that
    /// lands mid-fire stops every tick after it.
    async fn fire(&self, t: &TriggerRow, now: DateTime<Utc>) -> Result<FireDone, Retry> {
        let mut done = FireDone {
            trigger: t.id,
            owner: self.owner.clone(),
            claimed_next: t.next_fire_at,
            next: t.next_fire_at,
            pending: t.pending_fire_at,
        };
        let (spec, schedule) = match TriggerSpec::from_stored(&t.spec.0) {
            Ok(TriggerSpec::Cron(spec)) => match Schedule::new(&spec) {
                Ok(schedule) => (spec, schedule),
                Err(issues) => {
                    return Ok(self
                        .stop(t, done, format!("the schedule no longer parses: {}", issues[0].message))
                        .await)
                }
            },
            _ => return Ok(self.stop(t, done, "this trigger is not a cron schedule".into()).await),
        };
        if let Some(tick) = done.pending {
            if self.active(t).await? == 0 {
                self.start(t, tick).await?;
                done.pending = None;
            }
        }
        let Some(due) = t.next_fire_at.filter(|due| *due <= now) else { return Ok(done) };
        let plan = plan(&schedule, due, now, spec.catch_up);
        if plan.dropped {
            let policy = serde_json::to_value(spec.catch_up)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let reason =
                format!("ticks from {due} on were missed while no process was running; `catch_up` is `{policy}`");
            self.log(t.id, Some(due), DeliveryOutcome::Missed, Some(reason), None).await;
        }
        for tick in plan.fire {
            self.tick(t, &spec, tick, &mut done).await?;
        }
        done.next = plan.next;
        Ok(done)
    }

    /// One tick, under the overlap policy.
    async fn tick(
        &self,
        t: &TriggerRow,
        spec: &CronSpec,
        tick: DateTime<Utc>,
        done: &mut FireDone,
    ) -> Result<(), Retry> {
        if spec.overlap == Overlap::Allow || self.active(t).await? == 0 {
            return self.start(t, tick).await;
        }
        if spec.overlap == Overlap::QueueOne && done.pending.is_none() {
            done.pending = Some(tick);
            self.log(
                t.id,
                Some(tick),
                DeliveryOutcome::Queued,
                Some("an earlier instance is still running; this tick starts when it finishes".into()),
                None,
            )
            .await;
        } else {
            let reason = "an earlier instance of this schedule is still running (`overlap` policy)".to_owned();
            self.log(t.id, Some(tick), DeliveryOutcome::Skipped, Some(reason), None).await;
        }
        Ok(())
    }

    async fn active(&self, t: &TriggerRow) -> Result<i64, Retry> {
        self.store.active_trigger_instances(t.id, t.workflow_id).await.map_err(|e| Retry(e.to_string()))
    }

    /// Starts the tick's instance (idempotent per tick) and logs it. Errors the client of a
    /// start could fix are logged as the tick's outcome; the rest are retried.
    async fn start(&self, t: &TriggerRow, tick: DateTime<Utc>) -> Result<(), Retry> {
        let input = cron_input(t.id, tick);
        let key = format!("cron:{}:{}", t.id, tick.to_rfc3339());
        match self.engine.start(StartRequest::new(t.workflow_id, input).idempotency_key(key)).await {
            Ok(started) => self.log(t.id, Some(tick), DeliveryOutcome::Started, None, Some(started.id)).await,
            Err(EngineError::Store(e)) => return Err(Retry(e.to_string())),
            Err(EngineError::Internal(e)) => return Err(Retry(format!("{e:#}"))),
            Err(EngineError::Unavailable(e) | EngineError::Busy(e)) => return Err(Retry(e)),
            Err(e @ EngineError::RateLimited { .. }) => {
                self.log(t.id, Some(tick), DeliveryOutcome::RateLimited, Some(e.to_string()), None).await
            }
            Err(e) => self.log(t.id, Some(tick), DeliveryOutcome::Rejected, Some(e.to_string()), None).await,
        }
        Ok(())
    }

    /// A schedule that cannot fire: logged, and left without a next tick.
    async fn stop(&self, t: &TriggerRow, mut done: FireDone, reason: String) -> FireDone {
        tracing::warn!(trigger = %t.id, %reason, "a schedule stopped");
        self.log(t.id, t.next_fire_at, DeliveryOutcome::Failed, Some(reason), None).await;
        done.next = None;
        done.pending = None;
        done
    }

    async fn log(
        &self,
        trigger: Uuid,
        scheduled_at: Option<DateTime<Utc>>,
        outcome: DeliveryOutcome,
        reason: Option<String>,
        instance_id: Option<Uuid>,
    ) {
        let row = DeliveryRow {
            id: Uuid::now_v7(),
            trigger_id: trigger,
            received_at: Utc::now(),
            verified: None,
            delivery_key: None,
            scheduled_at,
            outcome,
            status: None,
            reason,
            instance_id,
            body_digest: None,
        };
        if let Err(e) = self.store.insert_delivery(&row).await {
            tracing::warn!(error = %e, %trigger, "could not log a cron tick");
        }
    }
}

/// The input of the instance a schedule starts at `tick`: fixed in shape, so a save checks it
/// against the workflow's `input_schema` before any tick fires.
pub fn cron_input(trigger: Uuid, tick: DateTime<Utc>) -> serde_json::Value {
    json!({"trigger_id": trigger, "scheduled_at": tick})
}
