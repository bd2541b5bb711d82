//! The timer wheel. Timers — delays ending, retry backoffs, node and instance timeouts, and
//! the wakes and follow-ups written for at once — run no node code, so they take no worker
//! slot. They are claimed up to `READ_AHEAD` before they are due, `TIMER_CLAIM` per
//! statement, under a lease that lasts past their due instant; held here in memory; and
//! fired when due, all that are due together handed to the commit lanes at once.
//!
//! Exactly once holds as for any claimed item: a timer is applied by a transition that
//! consumes it under its fence (owner and lease epoch). A timer this process holds but can no
//! longer apply — canceled with its instance, its lease given up on shutdown and taken by
//! another process — fails its fence and changes nothing. A process killed while holding
//! timers leaves them to their lease, which ends `lease` after the horizon they were read to.

use super::reserve::take_free;
use super::run::Runner;
use crate::store::WorkItem;
use chrono::Utc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;

/// How far ahead of their due instant timers are read into memory.
pub(super) const READ_AHEAD: Duration = Duration::from_secs(2);
/// Timers claimed per statement.
const TIMER_CLAIM: usize = 1_000;
/// Timers one process holds at once (claimed and not yet applied): the wheel's memory bound
/// (a held timer is a work item, a few hundred bytes).
pub(super) const WHEEL_SLOTS: usize = 10_000;

/// A claimed timer, its plan if known, and its place in the wheel.
type Held = (WorkItem, Option<Arc<super::plan::Plan>>, OwnedSemaphorePermit);

impl Runner {
    /// Claims the timers due within `READ_AHEAD` into free wheel slots and arms them. True if
    /// it filled every slot it asked for: more may be waiting.
    pub(super) async fn claim_timers(self: &Arc<Self>) -> bool {
        let permits = take_free(&self.workers.timer_slots, TIMER_CLAIM);
        if permits.is_empty() {
            return false;
        }
        let now = Utc::now();
        let horizon = now + chrono::Duration::from_std(READ_AHEAD).unwrap_or_default();
        let asked = permits.len();
        let claim =
            self.work.claim_timers(&self.workers.owner, now, horizon, horizon + self.workers.lease(), asked as i64);
        let items = match claim.await {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "claiming timers failed; retrying shortly");
                return false;
            }
        };
        let claimed = items.len();
        let plans = self.plans.for_items(&items).await;
        let mut held: Vec<Held> =
            items.into_iter().zip(plans).zip(permits).map(|((item, plan), permit)| (item, plan, permit)).collect();
        held.sort_by_key(|(item, _, _)| item.due_at);
        let engine = self.clone();
        tokio::spawn(async move { engine.fire_when_due(held).await });
        claimed == asked
    }

    /// Fires `held` (in due order) as each comes due: every timer due by then is handed
    /// over at once, so a burst due in the same instant reaches the lanes as one wave. Once
    /// the process is stopping, what is left is dropped: its leases are given up with the
    /// rest (`Runner::run`), so another process applies it without waiting for them to end.
    async fn fire_when_due(self: Arc<Self>, held: Vec<Held>) {
        for (item, plan, permit) in held {
            if let Ok(wait) = (item.due_at - Utc::now()).to_std() {
                tokio::time::sleep(wait).await;
            }
            if self.workers.draining() {
                return;
            }
            let engine = self.clone();
            tokio::spawn(async move {
                engine.handle(item, plan).await;
                drop(permit);
            });
        }
    }
}
