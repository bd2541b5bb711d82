//! Node attempts under shared limits (`/limits`; the store's side in `store/limits.rs`). An
//! attempt of a node naming a limit asks for a place before it begins; without one, its work
//! item is put back (`WorkQueue::defer_unbegun`) until the limit has room — no attempt is
//! counted, nothing is recorded on the instance, and no worker slot is held while it waits. A
//! place is given back when the attempt ends (a `task` or `subworkflow` node holds it while it
//! waits for its worker or child). A call answered 429 or 503 with `Retry-After` pauses the
//! whole limit that long and puts its attempt back to be made again once the pause ends,
//! rather than failing it. A map's items ask one by one, waiting inside the map's attempt.
//! A limit deleted since the version was published lets its attempts go on unlimited, and
//! the attempt's log says so.

use super::context::Seen;
use super::effects::Detail;
use super::machine::Event;
use super::plan::{Plan, PlanNode};
use super::run::Runner;
use crate::store::{Fence, LimitAnswer, LimitHolder, LimitRequest, Permit};
use chrono::Utc;
use std::sync::Arc;
use std::time::Duration;
use trellis_model::config::NodeKind;
use uuid::Uuid;

/// The longest a `Retry-After` pauses a limit: a service asking for more is asked again then.
const MOST_PAUSE: Duration = Duration::from_secs(3600);
/// The shortest: a `Retry-After: 0` (or a date past) must not become a loop of calls.
const LEAST_PAUSE: Duration = Duration::from_secs(1);
/// The longest a map's item sleeps before it asks its limit again.
const ITEM_LOOK_AGAIN: Duration = Duration::from_secs(1);

/// What became of a claimed attempt.
pub(super) enum Began {
    /// It ran: its result, to commit.
    Ran(Event, Detail),
    /// It waits for its shared limit; its work item is due again when the limit has room.
    Deferred,
}

impl Runner {
    /// Runs attempt `attempt` of `node`, within its shared limit if it names one.
    pub(super) async fn run_attempt(
        self: &Arc<Self>,
        plan: &Plan,
        instance: Uuid,
        seen: Seen,
        node: usize,
        attempt: u32,
        fence: &Fence,
    ) -> anyhow::Result<Began> {
        let spec = &plan.nodes[node];
        // A map's limit holds each of its items (`item_place`), not the map's attempt.
        let Some(limit) = spec.limit.as_deref().filter(|_| spec.kind != NodeKind::Map) else {
            let (event, detail) = self.execute(plan, instance, seen, node, attempt, fence).await;
            return Ok(Began::Ran(event, detail));
        };
        let holder = holder_of(spec, instance, attempt, None, Some(fence.work_id));
        let (holding, note) = match self.ask(&holder).await? {
            Err(until) => {
                self.work.defer_unbegun(fence, until).await?;
                return Ok(Began::Deferred);
            }
            Ok(granted) => granted,
        };
        let (event, mut detail) = self.execute(plan, instance, seen, node, attempt, fence).await;
        // The call was made: from here on trouble is logged, never an error that would make
        // it again at once. A pause comes before the place is given back, so the waiter woken
        // by it does not call meanwhile. (A limit deleted since lets nothing pause.)
        let paused = match detail.busy_for.filter(|_| note.is_none()) {
            Some(wait) => self.pause(limit, wait).await,
            None => None,
        };
        if holding && !matches!(event, Event::Suspended { .. }) {
            // Put back to be made again under the same holder: given back before that, so
            // the place the next try takes is not deleted by this release arriving late.
            match paused {
                Some(_) => self.give_back(&holder).await,
                None => self.give_back_later(&holder),
            }
        }
        if let Some(until) = paused {
            match self.work.defer_unbegun(fence, until).await {
                Ok(true) => return Ok(Began::Deferred),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, limit, "putting back an attempt told to wait failed; it counts as failed")
                }
            }
        }
        detail.logs.extend(note);
        Ok(Began::Ran(event, detail))
    }

    /// A place for `holder` (whether it holds one to give back, and a note for the attempt's
    /// log when the limit no longer exists), or when to ask again (`Err`).
    async fn ask(&self, holder: &LimitHolder) -> anyhow::Result<Result<(bool, Option<String>), chrono::DateTime<Utc>>> {
        let metrics = &self.bus.metrics;
        let answer = self.limit_lane.ask(LimitRequest::Acquire(holder.clone())).await?;
        let LimitAnswer::Permit(permit) = answer else { anyhow::bail!("a place asked for was answered {answer:?}") };
        Ok(match permit {
            Permit::Granted { holding } => {
                metrics.shared_limit(&holder.limit, "admitted");
                Ok((holding, None))
            }
            Permit::Missing => {
                metrics.shared_limit(&holder.limit, "missing");
                Ok((
                    false,
                    Some(format!(
                        "the shared limit `{}` no longer exists: this attempt ran without a limit",
                        holder.limit
                    )),
                ))
            }
            Permit::Wait { until } => {
                metrics.shared_limit(&holder.limit, "waited");
                Err(until)
            }
        })
    }

    /// Gives a place back, off the attempt's path: its result need not wait for it (the place
    /// stops counting once the attempt ends all the same), and it shares a transaction with
    /// the other places asked for and given back meanwhile. Only for a holder that never asks
    /// again (an attempt that ended): a later acquire under the same holder could be deleted
    /// by it. Cut off by a shutdown, a waiter for the place looks again at its next 1 s look.
    fn give_back_later(self: &Arc<Self>, holder: &LimitHolder) {
        let (runner, holder) = (self.clone(), holder.clone());
        tokio::spawn(async move { runner.give_back(&holder).await });
    }

    /// Gives a place back; an attempt waiting for it here is looked at now.
    async fn give_back(&self, holder: &LimitHolder) {
        let release = LimitRequest::Release { holder: holder.holder.clone(), limit: holder.limit.clone() };
        match self.limit_lane.ask(release).await {
            Ok(LimitAnswer::Released { woke: true }) => self.wakes.claims.notify_one(),
            Ok(_) => {}
            // Its attempt ends, which frees the place all the same (a place counts only while
            // its attempt runs); the row is pruned by the retention sweep.
            Err(e) => tracing::warn!(error = %e, holder = %holder.holder, "giving a shared limit's place back failed"),
        }
    }

    /// Pauses `limit` for `wait` (at least `LEAST_PAUSE`, at most `MOST_PAUSE`): until when;
    /// `None` if the pause could not be written (logged; the attempt then counts as failed).
    async fn pause(&self, limit: &str, wait: Duration) -> Option<chrono::DateTime<Utc>> {
        let wait = wait.clamp(LEAST_PAUSE, MOST_PAUSE);
        let until = Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default();
        if let Err(e) = crate::store::retry_transient(|| self.limits.pause_limit(limit, until)).await {
            tracing::warn!(error = %e, limit, "pausing a shared limit failed");
            return None;
        }
        self.bus.metrics.shared_limit(limit, "paused");
        tracing::info!(limit, %until, "a call under a shared limit was told to wait: the limit is paused");
        Some(until)
    }

    /// Waits inside a map's attempt until item `item` of attempt `attempt` of map node `spec`
    /// has a place under `limit`; the note to log, if the limit no longer exists.
    pub(super) async fn item_place(
        &self,
        spec: &PlanNode,
        instance: Uuid,
        attempt: u32,
        item: usize,
    ) -> anyhow::Result<(Option<LimitHolder>, Option<String>)> {
        let Some(_) = &spec.limit else { return Ok((None, None)) };
        let holder = holder_of(spec, instance, attempt, Some(item), None);
        loop {
            match self.ask(&holder).await? {
                Ok((true, note)) => return Ok((Some(holder), note)),
                // The limit no longer exists: nothing to give back, nothing to pause.
                Ok((false, Some(note))) => return Ok((None, Some(note))),
                // Nothing to give back; still told when a call is told to wait.
                Ok((false, None)) => return Ok((Some(LimitHolder { holder: String::new(), ..holder }), None)),
                Err(until) => {
                    let wait = (until - Utc::now()).to_std().unwrap_or_default().min(ITEM_LOOK_AGAIN);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Gives back an item's place; when its call was told to wait, pauses the limit and
    /// sleeps out the pause (the item then tries again without counting a try).
    pub(super) async fn item_done(&self, holder: Option<&LimitHolder>, busy_for: Option<Duration>) -> bool {
        let Some(holder) = holder else { return false };
        let paused = match busy_for {
            Some(wait) => self.pause(&holder.limit, wait).await,
            None => None,
        };
        if !holder.holder.is_empty() {
            self.give_back(holder).await;
        }
        let Some(until) = paused else { return false };
        tokio::time::sleep((until - Utc::now()).to_std().unwrap_or_default()).await;
        true
    }
}

fn holder_of(spec: &PlanNode, instance: Uuid, attempt: u32, item: Option<usize>, work_id: Option<Uuid>) -> LimitHolder {
    let mut holder = format!("{instance}:{}:{attempt}", spec.id);
    if let Some(item) = item {
        holder.push_str(&format!(":{item}"));
    }
    LimitHolder {
        holder,
        limit: spec.limit.clone().unwrap_or_default(),
        instance_id: instance,
        node_id: spec.id.clone(),
        attempt: attempt as i32,
        work_id,
    }
}
