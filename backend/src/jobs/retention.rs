//! Retention: how long finished instances and the audit log are kept, and the sweeper that
//! deletes what expired. Every process runs a sweeper; their batches skip rows another is
//! deleting (`SKIP_LOCKED`), and deleting what is already gone is harmless.

use crate::store::{DynStore, RetentionPolicy};
use chrono::{Duration, Utc};
use tokio::sync::watch;
use trellis_model::Issue;
use uuid::Uuid;

/// Instances deleted per transaction: short transactions keep the API responsive (and, on
/// SQLite, let other writers in between batches).
pub const SWEEP_BATCH: i64 = 500;
/// Days finished alert deliveries (and their attempts) are kept when the default policy sets
/// no `audit_days`. The delivery log is a record of what was sent, read when looking into an
/// incident: a month covers that, while rows (one per alert, up to five attempts each) stop
/// piling up forever on a noisy rule. With `audit_days` set, the log follows the audit log's age.
pub const ALERT_LOG_DAYS: i32 = 30;
/// The longest age a policy may set: 100 years.
pub const MAX_DAYS: i32 = 36_500;

/// Every problem with a policy: each age is null (keep forever) or 1..=`MAX_DAYS` days.
pub fn validate(policy: &RetentionPolicy) -> Vec<Issue> {
    [
        ("succeeded_days", policy.succeeded_days),
        ("failed_days", policy.failed_days),
        ("canceled_days", policy.canceled_days),
        ("timed_out_days", policy.timed_out_days),
        ("audit_days", policy.audit_days),
    ]
    .into_iter()
    .filter_map(|(field, days)| match days {
        Some(d) if !(1..=MAX_DAYS).contains(&d) => Some(
            Issue::new(
                "invalid_age",
                format!("`{field}` must be null (keep forever) or whole days from 1 to {MAX_DAYS}; got {d}"),
            )
            .path(field),
        ),
        _ => None,
    })
    .collect()
}

pub struct Sweeper {
    store: DynStore,
    every: std::time::Duration,
    hold: crate::cluster::Hold,
}

impl Sweeper {
    pub fn new(store: DynStore, every: std::time::Duration) -> Sweeper {
        Sweeper { store, every: every.max(std::time::Duration::from_secs(1)), hold: Default::default() }
    }

    /// Sweeps nothing while `hold` is held.
    pub fn held_by(self, hold: crate::cluster::Hold) -> Sweeper {
        Sweeper { hold, ..self }
    }

    /// Sweeps every `every` until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            tokio::select! {
                _ = tokio::time::sleep(self.every) => {}
                _ = shutdown.changed() => continue,
            }
            if !self.hold.pass(&mut shutdown).await {
                continue;
            }
            match self.sweep(&shutdown).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "retention sweep deleted expired instances"),
                Err(e) => tracing::warn!(error = %e, "retention sweep failed; trying again next round"),
            }
            match self.sweep_audit(&shutdown).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "retention sweep deleted expired audit log rows"),
                Err(e) => tracing::warn!(error = %e, "audit log sweep failed; trying again next round"),
            }
            match self.sweep_alerts(&shutdown).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "retention sweep deleted old alert deliveries"),
                Err(e) => tracing::warn!(error = %e, "alert delivery sweep failed; trying again next round"),
            }
            // No window is longer than a day: older marks (of keys not started since, or of
            // deleted workflows) count in none.
            let before =
                chrono::Utc::now() - chrono::Duration::milliseconds(trellis_model::flow::MAX_WINDOW_PERIOD_MS as i64);
            if let Err(e) = self.store.prune_windows(before).await {
                tracing::warn!(error = %e, "pruning old rate windows failed; trying again next round");
            }
            if let Err(e) = self.store.prune_limit_holds().await {
                tracing::warn!(error = %e, "pruning spent shared-limit places failed; trying again next round");
            }
        }
    }

    /// One pass over every policy; returns how many instances it deleted.
    pub async fn sweep(&self, shutdown: &watch::Receiver<bool>) -> crate::store::Result<u64> {
        let mut scopes: Vec<(Option<Uuid>, RetentionPolicy)> =
            self.store.workflow_retentions().await?.into_iter().map(|(w, p)| (Some(w), p)).collect();
        if let Some(default) = self.store.retention(None).await? {
            scopes.push((None, default));
        }
        let mut deleted = 0;
        for (workflow, policy) in scopes {
            for (status, days) in policy.ages() {
                let before = Utc::now() - Duration::days(i64::from(days));
                loop {
                    if *shutdown.borrow() {
                        return Ok(deleted);
                    }
                    let n = self.store.sweep_expired(workflow, status, before, SWEEP_BATCH).await?;
                    deleted += n;
                    if n < SWEEP_BATCH as u64 {
                        break;
                    }
                    // Let waiting requests and transitions through between batches.
                    tokio::task::yield_now().await;
                }
            }
        }
        Ok(deleted)
    }

    /// Deletes audit log rows older than the default policy's `audit_days`, in batches.
    pub async fn sweep_audit(&self, shutdown: &watch::Receiver<bool>) -> crate::store::Result<u64> {
        let Some(days) = self.store.retention(None).await?.and_then(|p| p.audit_days) else {
            return Ok(0);
        };
        let before = Utc::now() - Duration::days(i64::from(days));
        let mut deleted = 0;
        while !*shutdown.borrow() {
            let n = self.store.sweep_audit(before, SWEEP_BATCH).await?;
            deleted += n;
            if n < SWEEP_BATCH as u64 {
                break;
            }
            tokio::task::yield_now().await;
        }
        Ok(deleted)
    }

    /// Deletes finished alert deliveries older than the default policy's `audit_days`, or
    /// `ALERT_LOG_DAYS`, in batches (their attempts go with them); pending ones are kept.
    pub async fn sweep_alerts(&self, shutdown: &watch::Receiver<bool>) -> crate::store::Result<u64> {
        let days = self.store.retention(None).await?.and_then(|p| p.audit_days).unwrap_or(ALERT_LOG_DAYS);
        let now = Utc::now();
        let before = now - Duration::days(i64::from(days));
        let mut deleted = 0;
        while !*shutdown.borrow() {
            let n = self.store.sweep_alert_deliveries(before, now, SWEEP_BATCH).await?;
            deleted += n;
            if n < SWEEP_BATCH as u64 {
                break;
            }
            tokio::task::yield_now().await;
        }
        Ok(deleted)
    }
}
