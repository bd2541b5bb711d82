//! Attempts run ahead of their dispatch's commit. When an attempt ends, the attempts its
//! result dispatches of nodes that only compute (a no-op, a transform, a branch, a script:
//! nothing outside the instance sees them run) are run at once, on the instance as that result
//! leaves it, and their results are committed in the same batch as it (`commit/`): a chain of
//! such nodes costs one commit, not one per node, and every step is still written.
//!
//! Why it is safe: nothing of a step is published before its commit (history, live events,
//! the attempts it starts), and an attempt run ahead has no effect outside its instance. A crash
//! before the commit loses the chain: the first attempt is run again, as after any crash, and
//! the others follow it again. The store keeps a result run ahead only if an earlier step of the
//! same batch dispatched exactly that attempt, on the instance as the run saw it
//! (`store/batch.rs`, `Ahead`); otherwise the result is dropped and the attempt runs as usual.

use super::chain::Link;
use super::context::Seen;
use super::effects;
use super::machine::Event;
use super::plan::Plan;
use super::run::Runner;
use crate::sandbox::Lane;
use crate::store::phases::PHASES;
use crate::store::{absorb, Ahead, Fence, NewWork, Snapshot, Work, Writes};
use chrono::{SubsecRound, Utc};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use trellis_model::config::NodeKind;
use uuid::Uuid;

/// Most attempts run ahead of one commit (a lane's batch holds 256 requests).
const AHEAD_MOST: usize = 64;
/// No attempt is begun ahead after this long: the first result waits about this long at most
/// for its commit to begin.
const AHEAD_FOR: Duration = Duration::from_millis(2);
/// A run ahead that takes longer than this is dropped (its attempt then runs as usual).
const AHEAD_WAIT: Duration = Duration::from_millis(5);

impl Runner {
    /// `first`, the result of the attempt `fence` leases, followed by the results of the
    /// attempts it (and they, in turn) dispatch that may run ahead of its commit.
    pub(super) async fn run_ahead(
        self: &Arc<Self>,
        plan: &Arc<Plan>,
        instance: Uuid,
        fence: &Fence,
        first: Link,
    ) -> Vec<Link> {
        if !may_dispatch_ahead(plan, &first.event) {
            return vec![first];
        }
        let mut links = vec![first];
        let Some(recalled) = self.instances.remembered_instance(instance) else { return links };
        let (mut snapshot, mut outputs_bytes) = (recalled.snapshot, recalled.outputs_bytes);
        let rev = snapshot.instance.rev;
        let began = Instant::now();
        let (mut decided, mut runnable) = (0, VecDeque::new());
        loop {
            // What the store will decide, on the instance as this process last wrote it (the
            // batch checks that it still is, and decides again).
            while decided < links.len() {
                let link = &links[decided];
                let now = Utc::now().trunc_subsecs(6);
                let writes = effects::decide(plan, &snapshot, link.event.clone(), &link.detail, now, 0.0);
                let after = outputs_after(&snapshot, &writes, outputs_bytes);
                if writes.is_empty() || !absorb(&mut snapshot, &writes) {
                    return links;
                }
                outputs_bytes = after;
                decided += 1;
                runnable.extend(writes.new_work.iter().filter_map(|w| run_ahead_of(plan, w)));
            }
            if links.len() >= AHEAD_MOST || began.elapsed() >= AHEAD_FOR || self.workers.draining() {
                return links;
            }
            let Some((node, attempt)) = runnable.pop_front() else { return links };
            if !self.may_run_ahead(plan, node) {
                continue;
            }
            let seen = Seen::of(&snapshot, &plan.nodes[node], Some(outputs_bytes));
            let run = self.execute(plan, instance, seen, node, attempt as u32, fence);
            let Ok((event, detail)) = tokio::time::timeout(AHEAD_WAIT, run).await else {
                self.too_slow.insert(plan.workflow, &plan.nodes[node].id);
                PHASES.ran_ahead(false);
                return links;
            };
            let ahead = Ahead { node: plan.nodes[node].id.clone(), attempt, rev };
            links.push(Link { ahead: Some(ahead), event, detail });
        }
    }
}

impl Runner {
    /// Whether to run `node` ahead now: not one that took too long before, nor one whose own
    /// timeout is shorter than a run ahead is waited for, nor a sandboxed one while no sandbox
    /// worker of its lane is free (it would wait in line, holding the result before it).
    fn may_run_ahead(&self, plan: &Plan, node: usize) -> bool {
        let spec = &plan.nodes[node];
        let short = spec.timeout_ms.is_some_and(|ms| u128::from(ms) <= AHEAD_WAIT.as_millis());
        let lane = if spec.kind == NodeKind::Script { Lane::Scripts } else { Lane::Expressions };
        let worker_free = spec.kind == NodeKind::Noop || self.runtime.sandbox.has_free_worker(lane);
        // A node under a shared limit runs only once the limit gives it a place.
        spec.limit.is_none() && !short && worker_free && !self.too_slow.contains(plan.workflow, &spec.id)
    }
}

/// Whether `event` may dispatch an attempt that runs ahead: its node (again, after a backoff)
/// or a successor of it only computes. Spares every other result reading its instance.
fn may_dispatch_ahead(plan: &Plan, event: &Event) -> bool {
    match *event {
        Event::Succeeded { node, .. } | Event::Failed { node, .. } | Event::Lost { node, .. } => {
            plan.outgoing[node].iter().any(|edge| runs_ahead(plan.nodes[edge.to].kind))
        }
        Event::RetryDue { node, .. } => runs_ahead(plan.nodes[node].kind),
        _ => false,
    }
}

/// The (node, attempt) of a dispatched attempt that may run ahead of its dispatch's commit.
fn run_ahead_of(plan: &Plan, work: &NewWork) -> Option<(usize, i32)> {
    let Work::Run(at) = &work.work else { return None };
    let node = plan.index_of(&at.node)?;
    runs_ahead(plan.nodes[node].kind).then_some((node, at.attempt))
}

/// The JSON bytes of `snapshot`'s stored outputs (`outputs_bytes` now) once `writes` replace
/// their rows: counted for the rows written, so a run ahead costs what it changes.
fn outputs_after(snapshot: &Snapshot, writes: &Writes, outputs_bytes: usize) -> usize {
    writes.nodes.iter().fold(outputs_bytes, |total, new| {
        let old = snapshot.index_of(&new.node_id, new.position).map_or(0, |at| snapshot.nodes[at].output_bytes());
        (total + new.output_bytes()).saturating_sub(old)
    })
}

/// Whether a node type only computes over its instance (its attempts may run ahead).
fn runs_ahead(kind: NodeKind) -> bool {
    kind.spec().runs_ahead
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NodeRow;
    use trellis_model::json_len::serialized_len;

    #[test]
    fn only_nodes_that_compute_over_their_instance_run_ahead() {
        assert!(runs_ahead(NodeKind::Noop) && runs_ahead(NodeKind::Transform) && runs_ahead(NodeKind::Script));
        assert!(!runs_ahead(NodeKind::Http) && !runs_ahead(NodeKind::Delay) && !runs_ahead(NodeKind::Subworkflow));
    }

    #[test]
    fn the_running_count_of_outputs_matches_a_recount_after_each_write() {
        use crate::store::InstanceRow;
        use serde_json::json;
        use trellis_model::{InstanceStatus, NodeStatus};
        let row = |id: &str, at: i32, output: Option<serde_json::Value>| NodeRow {
            output,
            ..NodeRow::fresh(id.into(), at, NodeStatus::Succeeded)
        };
        let recount =
            |s: &Snapshot| s.nodes.iter().filter_map(|r| r.output.as_ref()).map(serialized_len).sum::<usize>();
        let nodes =
            vec![row("a", 0, Some(json!({"big": "x".repeat(50)}))), row("b", 1, None), row("c", 2, Some(json!(1)))];
        let mut snapshot = Snapshot {
            instance: InstanceRow::for_test(InstanceStatus::Running),
            nodes: nodes.into_iter().map(Arc::new).collect(),
        };
        let mut count = recount(&snapshot);
        // `b` gains an output, `a` loses its own (a retry resets it), and `c`'s row is written
        // at a position it does not hold in the snapshot (found by id).
        let writes = Writes {
            nodes: vec![row("b", 1, Some(json!([1, 2, 3]))), row("a", 0, None), row("c", 7, Some(json!("abc")))],
            ..Writes::default()
        };
        count = outputs_after(&snapshot, &writes, count);
        assert!(absorb(&mut snapshot, &writes));
        assert_eq!(count, recount(&snapshot));
        assert_eq!(count, serialized_len(&json!([1, 2, 3])) + serialized_len(&json!("abc")));
    }
}
