//! Handling one claimed work item, whoever claimed it — the claim loop (`runner.rs`), the
//! timer wheel (`wheel.rs`), or the commit path that leased it to this process
//! (`RunLeased`): the item's kind decides what happens. A node attempt runs (`attempt.rs`),
//! the attempts its result dispatches that only compute run ahead of its commit
//! (`ahead.rs`), and the chain goes to the commit path (`commit/`); a bad end's item goes
//! to its hook (`alert_items.rs`, `failure_handler.rs`); a child's end to `children.rs`.

use super::chain::Link;
use super::commit::{RunLeased, OUTAGE_POLL};
use super::context::{others_bytes, reads_context, Seen};
use super::effects::{self, Detail};
use super::limited::Began;
use super::machine::Event;
use super::plan::Plan;
use super::results::output;
use super::run::Runner;
use crate::store::phases::PHASES;
use crate::store::transient::trouble_of;
use crate::store::{Fence, Trouble, Work, WorkItem, Writes};
use chrono::Utc;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;
use trellis_model::config::NodeKind;

impl Runner {
    /// Handles one claimed item. `plan` is known when this process dispatched the item itself.
    pub(super) async fn handle(self: &Arc<Self>, item: WorkItem, plan: Option<Arc<Plan>>) {
        loop {
            let Err(e) = self.handle_item(&item, plan.clone()).await else { return };
            // The database was away (reading the instance, say): try again as soon as it is
            // back, while the lease is still ours, rather than leave the item to the lease.
            // This cannot run an attempt twice: a commit gives up on an outage only after a
            // whole lease (see `commit`), by when this item's lease has ended.
            let leased = item
                .lease_expires_at
                .is_some_and(|until| Utc::now() + effects::ms_duration(OUTAGE_POLL.as_millis() as u64) < until);
            if leased && trouble_of(&e) == Some(Trouble::Unavailable) && !self.workers.draining() {
                tokio::time::sleep(OUTAGE_POLL).await;
                continue;
            }
            // The lease runs out and the item is claimed again: nothing is lost.
            tracing::warn!(error = %e, work = %item.id, kind = %item.kind_name(), "work item failed; it will be retried");
            return;
        }
    }

    async fn handle_item(self: &Arc<Self>, item: &WorkItem, known: Option<Arc<Plan>>) -> anyhow::Result<()> {
        let Some(fence) = item.fence() else { return Ok(()) };
        let work = match &item.work {
            Ok(work) => work,
            Err(unreadable) => {
                // No build of this version will read it: left to its lease for a newer process,
                // and said again each time it comes back.
                let (work, instance, kind) = (item.id, item.instance_id, &unreadable.kind);
                tracing::error!(%work, %instance, kind, why = %unreadable, "a work item this build cannot read is left to its lease");
                return Ok(());
            }
        };
        let node_of = |plan: &Plan| work.attempt().and_then(|at| plan.index_of(&at.node));
        // Loading the instance is only needed for the plan (when not known) and for the
        // expression context of node types that read it: as this process last wrote it, if it
        // remembers it — the context is the input and upstream outputs, which stay as they
        // are while this attempt is the node's (a retry that resets them fences it out).
        let (plan, read) = match known {
            Some(plan) if !node_of(&plan).is_some_and(|n| reads_context(plan.nodes[n].kind)) => (plan, None),
            _ => {
                let (snapshot, outputs_bytes) = match self.instances.remembered_instance(item.instance_id) {
                    Some(recalled) => (recalled.snapshot, Some(recalled.outputs_bytes)),
                    None => {
                        // BEGIN, the instance, its nodes, COMMIT.
                        PHASES.autocommit(4);
                        let Some(snapshot) = self.instances.get_instance(item.instance_id).await? else {
                            return Ok(());
                        };
                        (snapshot, None)
                    }
                };
                let plan = self.plans.get(snapshot.instance.workflow_id, snapshot.instance.version).await?;
                (plan, Some((snapshot, outputs_bytes)))
            }
        };
        // What an attempt of `node` sees: only what it can use (`context.rs`).
        let seen = |node: usize| match &read {
            Some((snapshot, outputs_bytes)) => Seen::of(snapshot, &plan.nodes[node], *outputs_bytes),
            None => Seen::nothing(),
        };
        let held = (item.instance_id, &fence);
        let (event, detail) = match (work, node_of(&plan)) {
            (Work::OnFailure(end), _) => return self.failure_handlers.start(held, end, &plan).await,
            (Work::Alert(end), _) => return self.alerts.raise(held, end, &plan).await,
            (Work::InstanceTimeout, _) => (Event::TimedOut, Detail::default()),
            (Work::CancelChildren, _) => {
                self.cancel_children(item.instance_id).await?;
                return self.consume(item.instance_id, &fence).await;
            }
            (Work::ChildDone { .. }, Some(node)) if plan.nodes[node].kind == NodeKind::Map => {
                // A map item's child ended: its item (running in whichever process holds the
                // map attempt) reads the child itself; here, only a nudge to look now.
                self.consume(item.instance_id, &fence).await?;
                self.wakes.map_children.notify_waiters();
                return Ok(());
            }
            (Work::Run(at), Some(node)) if item.lease_epoch > 1 => {
                let error = "the process running this attempt stopped before finishing it".to_owned();
                (Event::Lost { node, attempt: at.number() }, Detail { error: Some(error), ..Default::default() })
            }
            (Work::Run(at), Some(node)) => {
                match self.run_attempt(&plan, item.instance_id, seen(node), node, at.number(), &fence).await? {
                    Began::Ran(event, detail) => (event, detail),
                    Began::Deferred => return Ok(()),
                }
            }
            (Work::Resume(at), Some(node)) => (
                Event::Succeeded { node, attempt: at.number(), outcome: None },
                output(json!({"resumed_at": Utc::now()})),
            ),
            (Work::Retry(at), Some(node)) => (Event::RetryDue { node, attempt: at.number() }, Detail::default()),
            (Work::NodeTimeout(at), Some(node)) if plan.nodes[node].kind == NodeKind::Approval => {
                self.approval_timeout(item.instance_id, (node, &plan.nodes[node]), at.number()).await?
            }
            (Work::NodeTimeout(at), Some(node)) => {
                let ms = plan.nodes[node].timeout_ms.unwrap_or_default();
                let detail = Detail { error: Some(format!("timed out after {ms} ms")), ..Default::default() };
                (Event::Failed { node, attempt: at.number(), retryable: true, timed_out: true }, detail)
            }
            (Work::ChildDone { attempt, end }, Some(node)) => {
                let others = read.as_ref().map_or(0, |(s, bytes)| others_bytes(s, &plan.nodes[node].id, *bytes));
                self.child_done(&plan.nodes[node].id, node, attempt.number(), end, others)
            }
            (Work::Run(_) | Work::Resume(_) | Work::Retry(_) | Work::NodeTimeout(_) | Work::ChildDone { .. }, None)
            | (Work::Task { .. }, _) => {
                // For a node its version's plan does not have, or a task (claimed by workers,
                // never here): consumed without touching the instance.
                tracing::warn!(work = %item.id, kind = %work.kind(), "dropping a work item no node of its plan can take");
                return self.consume(item.instance_id, &fence).await;
            }
        };
        // The attempts this result dispatches that only compute run now and are committed
        // with it (`ahead.rs`).
        let links = self.run_ahead(&plan, item.instance_id, &fence, Link::new(event, detail)).await;
        self.committer.commit_chain(&plan, item.instance_id, Some(&fence), links).await?;
        Ok(())
    }
}

impl RunLeased for Runner {
    fn run_leased(self: Arc<Self>, item: WorkItem, plan: Arc<Plan>, permit: OwnedSemaphorePermit) {
        if self.hold.is_held() {
            // Its lease runs out and the claim loop takes it once the database is resumed.
            return;
        }
        tokio::spawn(async move {
            self.handle(item, Some(plan)).await;
            drop(permit);
        });
    }
}

impl Runner {
    /// Consumes a work item (fenced) without changing its instance.
    pub(super) async fn consume(&self, instance: uuid::Uuid, fence: &Fence) -> anyhow::Result<()> {
        self.instances.transition(instance, Some(fence), &|_| Writes::default()).await?;
        Ok(())
    }
}
