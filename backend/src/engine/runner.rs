//! The shell around the state machine: claims due work, runs node attempts, and commits
//! each outcome as one fenced transition. Every process runs one of these loops; they
//! share the work through leases, so any number may serve one Postgres.
//!
//! Part of the run part (`run.rs`): the loop; what it claims is handled in `handle.rs`.

use super::reserve::take_free;
use super::run::Runner;
use super::wheel::READ_AHEAD;
use chrono::Utc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Claims per round; also bounded by free worker slots.
const CLAIM_BATCH: usize = 64;
/// Longest sleep between claim rounds: the bound on how late a timer fires after another
/// process set it (this process's own timers wake it directly).
const MAX_IDLE: Duration = Duration::from_millis(250);
const ADMIT_EVERY: Duration = Duration::from_secs(1);
/// While the claim loop is busy with runs, timers are looked for at most this often (unless
/// the last look filled its claim): a claim query per run claimed would double the queries.
const TIMER_POLL: Duration = Duration::from_millis(10);

impl Runner {
    /// Runs the claim loop until `shutdown` turns true, then drains: waits up to `grace`
    /// for running attempts and gives up every lease still held so others take over at once.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>, grace: Duration) {
        let mut last_admit = tokio::time::Instant::now() - ADMIT_EVERY;
        let mut last_timers = tokio::time::Instant::now() - TIMER_POLL;
        let mut more_timers = false;
        while !*shutdown.borrow() {
            if !self.hold.pass(&mut shutdown).await {
                // Released: what a start leased while held is taken again now, not at its lease's end.
                if let Err(e) = self.work.release_leases(&self.workers.owner).await {
                    tracing::warn!(error = %e, "could not release leases after the hold; they will expire");
                }
                continue;
            }
            if last_admit.elapsed() >= ADMIT_EVERY {
                self.admission.admit_everywhere().await;
                last_admit = tokio::time::Instant::now();
            }
            if more_timers || last_timers.elapsed() >= TIMER_POLL {
                more_timers = self.claim_timers().await;
                last_timers = tokio::time::Instant::now();
            }
            let (claimed, slots) = self.claim_round().await;
            if more_timers || (slots > 0 && claimed == slots) {
                continue;
            }
            if slots == 0 {
                // Every worker is busy: wait for one to free up rather than polling (or for
                // timers to come due).
                tokio::select! {
                    _ = self.workers.permits.acquire() => {}
                    _ = tokio::time::sleep(TIMER_POLL) => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
            let wait = self.idle_wait(last_timers).await;
            tokio::select! {
                _ = self.wakes.claims.notified() => {}
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => {}
            }
        }
        // No new attempts for this process from here on; running ones may finish.
        self.workers.drain();
        let all = self.workers.count as u32;
        let _ = tokio::time::timeout(grace, self.workers.permits.acquire_many(all)).await;
        match self.work.release_leases(&self.workers.owner).await {
            Ok(n) if n > 0 => tracing::info!(released = n, "released leases for other processes"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not release leases"),
        }
    }

    /// Takes free worker slots first, then claims at most that many items, so nothing
    /// claimed waits for a worker while its lease runs out. Returns (claimed, slots).
    async fn claim_round(self: &Arc<Self>) -> (usize, usize) {
        let permits = take_free(&self.workers.permits, CLAIM_BATCH);
        let slots = permits.len();
        if slots == 0 {
            return (0, 0);
        }
        let now = Utc::now();
        let items = match self.work.claim_due(&self.workers.owner, now, now + self.workers.lease(), slots as i64).await
        {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "claiming work failed; retrying shortly");
                return (0, slots.saturating_sub(1));
            }
        };
        let claimed = items.len();
        // The plans, read for the whole claim, spare an attempt that reads nothing of its
        // instance (a no-op, a delay) reading the instance first.
        let plans = self.plans.for_items(&items).await;
        for ((item, plan), permit) in items.into_iter().zip(plans).zip(permits) {
            let engine = self.clone();
            tokio::spawn(async move {
                engine.handle(item, plan).await;
                drop(permit);
            });
        }
        (claimed, slots)
    }

    /// How long the claim loop may sleep: until the next node attempt is due, or the next
    /// timer comes within the wheel's read-ahead (not before the timer poll allows another
    /// look, nor while the wheel is full), and at most `MAX_IDLE`.
    async fn idle_wait(&self, last_timers: tokio::time::Instant) -> Duration {
        let Ok(next) = self.work.next_due().await else { return MAX_IDLE };
        let now = Utc::now();
        let until = |at: chrono::DateTime<Utc>| (at - now).to_std().unwrap_or(Duration::ZERO);
        let run = next.run.map_or(MAX_IDLE, until);
        let timer = match next.timer {
            Some(_) if self.workers.timer_slots.available_permits() == 0 => TIMER_POLL,
            Some(due) => until(due).saturating_sub(READ_AHEAD).max(TIMER_POLL.saturating_sub(last_timers.elapsed())),
            None => MAX_IDLE,
        };
        run.min(timer).min(MAX_IDLE)
    }
}
