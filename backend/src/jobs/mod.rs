//! Operations on many instances: bulk jobs (`purge`, `cancel`) run by a background loop in
//! every process, and the retention sweeper (`retention`).
//!
//! A job is a row in `jobs`, claimed with a lease like `work` (`SKIP_LOCKED` on Postgres), so
//! one process runs it and another takes it over when the lease of a dead one expires. It
//! walks the matching instances in id order, a bounded batch at a time, keeping its
//! position in the row: memory stays bounded however many instances match, each batch is a
//! short transaction, and a takeover resumes where the last recorded batch ended.

pub mod retention;

use crate::engine::{Engine, EngineError};
use crate::store::{BatchDone, InstanceQuery, JobLease, JobRow, JobStore, StatusSet};
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
use tokio::sync::watch;
use trellis_model::api::InstanceFilter;
use trellis_model::{InstanceStatus, JobStatus};
use uuid::Uuid;

/// Instances purged per transaction.
pub const PURGE_BATCH: i64 = 500;
/// Instances canceled per recorded batch: each cancel is a transition of its own, so a
/// smaller batch keeps the lease renewed often.
pub const CANCEL_BATCH: i64 = 100;
/// How often an idle process looks for a job (jobs created elsewhere, or left by a dead
/// process); one created by this process wakes its loop at once.
const IDLE: std::time::Duration = std::time::Duration::from_secs(2);
/// Wakes the idle job loops of this process. Process-wide rather than per server: waking a
/// loop with nothing to do costs one claim attempt.
static WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Tells this process's job loops a job was just queued.
pub fn wake() {
    WAKE.notify_waiters();
}
/// Database errors in a row before a job is given up as failed.
const MAX_ERRORS: u32 = 3;

pub use trellis_model::JobKind;

/// What a job of each kind acts on, and how much of it at a time.
pub trait JobScope: Copy {
    /// The statuses the action applies to; instances in others are left alone.
    fn statuses(self) -> StatusSet;
    /// Only instances that had ended before this moment (a job's creation), if the action
    /// asks it: a retry leaves alone what was retried since (by this job before a takeover,
    /// or by someone else) and finished again.
    fn ended_before(self, job_created: DateTime<Utc>) -> Option<DateTime<Utc>>;
    fn applies_to(self, status: InstanceStatus) -> bool {
        self.statuses().contains(status)
    }
    fn batch_size(self) -> i64;
}

impl JobScope for JobKind {
    fn statuses(self) -> StatusSet {
        match self {
            JobKind::Purge => StatusSet::Terminal,
            JobKind::Cancel => StatusSet::Unfinished,
            JobKind::Retry => StatusSet::Retryable,
        }
    }

    fn ended_before(self, job_created: DateTime<Utc>) -> Option<DateTime<Utc>> {
        (self == JobKind::Retry).then_some(job_created)
    }

    fn batch_size(self) -> i64 {
        match self {
            JobKind::Purge => PURGE_BATCH,
            JobKind::Cancel | JobKind::Retry => CANCEL_BATCH,
        }
    }
}

/// A new job row, queued for the loop.
pub fn new_job(kind: JobKind, filter: &InstanceFilter, matched: i64, created_by: &str) -> JobRow {
    let now = Utc::now();
    let id = Uuid::now_v7();
    JobRow {
        id,
        kind,
        filter: sqlx::types::Json(serde_json::to_value(filter).unwrap_or_default()),
        status: JobStatus::Queued,
        matched,
        processed: 0,
        failed: 0,
        error: None,
        created_by: created_by.to_owned(),
        created_at: now,
        updated_at: now,
        last_id: None,
        // Made after every instance that existed when the job was created (UUIDv7 is
        // time-ordered): later starts are not the job's business.
        until_id: id,
        lease_owner: None,
        lease_expires_at: None,
    }
}

pub struct JobLoop {
    store: Arc<dyn JobStore>,
    engine: Arc<Engine>,
    owner: String,
    lease: Duration,
}

/// Why a job stopped before its end.
enum Stop {
    /// The lease was lost (another process took over) or the job was canceled.
    Lost,
    /// The process is shutting down; it releases the lease and another process resumes.
    Shutdown,
}

impl JobLoop {
    pub fn new(store: Arc<dyn JobStore>, engine: Arc<Engine>, lease: std::time::Duration) -> JobLoop {
        let lease = Duration::from_std(lease).unwrap_or(Duration::seconds(30));
        JobLoop { store, engine, owner: format!("jobs-{}", Uuid::now_v7()), lease }
    }

    /// Runs jobs until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            if !self.engine.hold().pass(&mut shutdown).await {
                continue;
            }
            let now = Utc::now();
            match self.store.claim_job(&self.owner, now, now + self.lease).await {
                Ok(Some(job)) => {
                    self.run_job(job, &shutdown).await;
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "claiming a job failed; retrying shortly"),
            }
            tokio::select! {
                _ = tokio::time::sleep(IDLE) => {}
                _ = WAKE.notified() => {}
                _ = shutdown.changed() => {}
            }
        }
    }

    async fn run_job(&self, job: JobRow, shutdown: &watch::Receiver<bool>) {
        let mut lease = JobLease { job: job.id, owner: self.owner.clone(), until: Utc::now() + self.lease };
        let filter = serde_json::from_value::<InstanceFilter>(job.filter.0.clone()).ok();
        let kind = job.kind;
        let Some(Ok(query)) = filter.as_ref().map(InstanceQuery::from_filter) else {
            self.finish(&lease, JobStatus::Failed, Some("the job's filter is not understood by this server")).await;
            return;
        };
        tracing::info!(job = %job.id, kind = kind.as_str(), "running a bulk job");
        let mut after = job.last_id;
        let mut errors = 0;
        loop {
            if *shutdown.borrow() {
                self.release(&lease).await;
                return;
            }
            lease.until = Utc::now() + self.lease;
            let ended_before = kind.ended_before(job.created_at);
            let ids = match self
                .store
                .matching_ids(&query, kind.statuses(), ended_before, after, job.until_id, kind.batch_size())
                .await
            {
                Ok(ids) => ids,
                Err(e) => {
                    errors += 1;
                    tracing::warn!(job = %job.id, error = %e, "reading a job's batch failed");
                    if errors >= MAX_ERRORS {
                        self.finish(&lease, JobStatus::Failed, Some("database error; see the server log")).await;
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            };
            let Some(&last) = ids.last() else {
                self.finish(&lease, JobStatus::Succeeded, None).await;
                return;
            };
            match self.batch(kind, &lease, &ids, shutdown).await {
                Ok(Ok(())) => {
                    errors = 0;
                    after = Some(last);
                }
                Ok(Err(Stop::Lost)) => return,
                Ok(Err(Stop::Shutdown)) => {
                    self.release(&lease).await;
                    return;
                }
                Err(e) => {
                    errors += 1;
                    tracing::warn!(job = %job.id, error = %e, "a job's batch failed");
                    if errors >= MAX_ERRORS {
                        self.finish(&lease, JobStatus::Failed, Some("database error; see the server log")).await;
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// Applies the job's action to one batch and records it.
    async fn batch(
        &self,
        kind: JobKind,
        lease: &JobLease,
        ids: &[Uuid],
        shutdown: &watch::Receiver<bool>,
    ) -> crate::store::Result<Result<(), Stop>> {
        let last_id = ids.last().copied();
        let recorded = match kind {
            // Deletes and the progress commit together, and only finished instances go.
            JobKind::Purge => self.store.purge_batch(lease, ids, &BatchDone { last_id, ..Default::default() }).await?,
            JobKind::Cancel | JobKind::Retry => {
                let mut done = BatchDone { last_id, ..Default::default() };
                for (k, &id) in ids.iter().enumerate() {
                    if *shutdown.borrow() {
                        // Record the part done, so whoever resumes neither repeats nor
                        // under-counts it.
                        done.last_id = k.checked_sub(1).map(|k| ids[k]);
                        self.store.record_batch(lease, &done).await?;
                        return Ok(Err(Stop::Shutdown));
                    }
                    match self.act(kind, id).await {
                        Ok(()) => done.processed += 1,
                        // Finished or purged since it was listed: nothing left to do.
                        Err(EngineError::Conflict(_) | EngineError::NotFound(_)) => {}
                        Err(e) => {
                            tracing::warn!(instance = %id, error = %e, action = kind.as_str(), "a bulk action on an instance failed");
                            done.failed += 1;
                        }
                    }
                }
                self.store.record_batch(lease, &done).await?
            }
        };
        Ok(if recorded { Ok(()) } else { Err(Stop::Lost) })
    }

    /// One instance's action, through the engine so that its history records it.
    async fn act(&self, kind: JobKind, id: Uuid) -> Result<(), EngineError> {
        match kind {
            JobKind::Retry => self.engine.retry(id, "failed", false).await.map(|_| ()),
            JobKind::Cancel => self.engine.cancel(id).await,
            // Purges go a whole batch per transaction (`purge_batch`), never one by one.
            JobKind::Purge => Err(EngineError::Internal(anyhow::anyhow!("a purge is not applied per instance"))),
        }
    }

    /// On shutdown: the job's position is recorded up to the last batch; another process
    /// picks it up from there without waiting for the lease to run out.
    async fn release(&self, lease: &JobLease) {
        if let Err(e) = self.store.release_job(lease).await {
            tracing::warn!(job = %lease.job, error = %e, "releasing a job failed; its lease will expire");
        }
    }

    async fn finish(&self, lease: &JobLease, status: JobStatus, error: Option<&str>) {
        match self.store.finish_job(lease, status, error).await {
            Ok(true) => tracing::info!(job = %lease.job, status = status.as_str(), "bulk job finished"),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(job = %lease.job, error = %e, "recording a job's end failed; its lease will expire")
            }
        }
    }
}
