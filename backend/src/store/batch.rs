//! Group commit, the pure half: what the steps of one batch write, gathered so that each kind
//! of row is written once per batch (one upsert of node rows, one insert of work items, one
//! of history entries) while the outcome is what applying the steps one after another would
//! have written. The SQL half is `transitions.rs`.

use super::work::{Fence, NewWork, Work};
use super::{InstanceUpdate, NewEvent, NodeRow, Snapshot, TransitionOutcome, Writes};
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// One state change of a batch: an event for `instance`, consuming the fenced work item.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    pub instance: Uuid,
    pub fence: Option<&'a Fence>,
    /// Set for the result of an attempt run before the step dispatching it was written.
    pub ahead: Option<&'a Ahead>,
}

/// An attempt run ahead of its dispatch's commit (`engine/ahead.rs`). Its result holds only if
/// an earlier step of its own chain dispatches exactly this attempt, the instance was at `rev`
/// when the batch began (as the run saw it) and no other step of the instance applied before the
/// chain: nothing wrote the instance between what the run saw and its chain. Then the attempt's
/// work item is neither written nor launched: it was dispatched and ended in one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ahead {
    pub node: String,
    pub attempt: i32,
    pub rev: i64,
}

impl Ahead {
    fn is_run(&self, w: &NewWork) -> bool {
        w.work.runs(&self.node, self.attempt)
    }
}

/// Decides step `i` of a batch given its instance as the batch's earlier steps left it.
pub type StepDecide<'a> = &'a (dyn Fn(usize, &Snapshot) -> Writes + Send + Sync);

/// Work items and node rows the batch writes, and each instance's new history entries.
#[derive(Debug, Default)]
pub struct BatchWrites {
    /// The last row each step wrote for a node, by (instance, node id).
    pub nodes: Vec<(Uuid, NodeRow)>,
    node_index: HashMap<(Uuid, String), usize>,
    /// Work items to insert: (instance, workflow, item).
    pub work: Vec<(Uuid, Uuid, NewWork)>,
    /// Attempts whose leftover stored work is deleted: (instance, node id, attempt).
    pub ended: Vec<(Uuid, String, i32)>,
    /// Instances whose stored work is all deleted (they finished).
    pub cleared: Vec<Uuid>,
    /// History entries per instance, in step order: (instance, workflow, entries).
    pub events: Vec<(Uuid, Uuid, Vec<NewEvent>)>,
    /// Work for other instances (parents woken by their children): (instance, item).
    pub wakes: Vec<(Uuid, NewWork)>,
}

impl BatchWrites {
    /// Adds one step's writes after those of the steps before it. Returns where the step's
    /// first history entry sits among its instance's entries of this batch.
    ///
    /// Work is deleted before any is inserted, so a deletion must not reach items that
    /// earlier steps of the batch add: those are dropped here instead, exactly as the
    /// deletion would have removed them had they been inserted already.
    pub fn add(&mut self, instance: Uuid, workflow: Uuid, writes: &Writes) -> usize {
        for (node, attempt) in &writes.ended_attempts {
            self.work.retain(|(i, _, w)| {
                let of_attempt = w.work.attempt().is_some_and(|at| at.node == *node && at.attempt == *attempt);
                !(*i == instance && of_attempt && !matches!(w.work, Work::Retry(_)))
            });
            self.ended.push((instance, node.clone(), *attempt));
        }
        if writes.clear_work {
            self.work.retain(|(i, _, _)| *i != instance);
            self.cleared.push(instance);
        }
        self.work.extend(writes.new_work.iter().map(|w| (instance, workflow, w.clone())));
        self.wakes.extend(writes.wake.iter().cloned());
        for row in &writes.nodes {
            match self.node_index.get(&(instance, row.node_id.clone())) {
                Some(&at) => self.nodes[at].1 = row.clone(),
                None => {
                    self.node_index.insert((instance, row.node_id.clone()), self.nodes.len());
                    self.nodes.push((instance, row.clone()));
                }
            }
        }
        let entries = match self.events.iter_mut().find(|(i, _, _)| *i == instance) {
            Some((_, _, entries)) => entries,
            None => {
                self.events.push((instance, workflow, Vec::new()));
                &mut self.events.last_mut().expect("just pushed").2
            }
        };
        let offset = entries.len();
        entries.extend(writes.events.iter().cloned());
        offset
    }
}

/// A batch's steps decided: what each gave, and what the batch writes.
#[derive(Default)]
pub struct Decided {
    /// Per step; `Applied` ones are filled in once written (`Decided::outcomes`).
    pub outcomes: Vec<TransitionOutcome>,
    /// Per step that applied: its writes and where its history entries begin in its instance's.
    pub applied: Vec<Option<(Writes, usize)>>,
    pub batch: BatchWrites,
    /// The steps' instance updates, in order (a restart's or a failure's are written one by one).
    pub updates: Vec<(Uuid, InstanceUpdate)>,
    /// Instances a step applied to, in id order: their `rev` is one higher in `snapshots`.
    pub written: Vec<Uuid>,
    /// Instances whose snapshot misses a node row a step wrote: not to be remembered.
    pub incomplete: Vec<Uuid>,
}

impl Decided {
    /// Decides `steps` (`groups`: `by_instance`) on `snapshots`, each step on its instance as
    /// the earlier steps left it (`absorb`); `fenced(i)`: step `i`'s fence did not hold.
    pub fn steps(
        steps: &[Step<'_>],
        groups: &[(Uuid, Vec<usize>)],
        snapshots: &mut HashMap<Uuid, Snapshot>,
        fenced: impl Fn(usize) -> bool,
        decide: StepDecide<'_>,
    ) -> Decided {
        let mut d = Decided {
            outcomes: vec![TransitionOutcome::NotFound; steps.len()],
            applied: vec![None; steps.len()],
            ..Decided::default()
        };
        for (id, members) in groups {
            if let Some(snapshot) = snapshots.get_mut(id) {
                d.instance_steps(steps, *id, members, snapshot, &fenced, decide);
            }
        }
        d
    }

    /// Decides one instance's steps of the batch, in order.
    fn instance_steps(
        &mut self,
        steps: &[Step<'_>],
        id: Uuid,
        members: &[usize],
        snapshot: &mut Snapshot,
        fenced: &impl Fn(usize) -> bool,
        decide: StepDecide<'_>,
    ) {
        let workflow = snapshot.instance.workflow_id;
        let rev = snapshot.instance.rev;
        // Where the chain of the step at hand begins (the steps run ahead follow their chain's
        // first step), and whether a step of the instance applied before that chain.
        let (mut chain, mut clean, mut applied_any) = (0, true, false);
        for (k, &i) in members.iter().enumerate() {
            if steps[i].ahead.is_none() {
                (chain, clean) = (k, !applied_any);
            }
            let held = |a: &Ahead| clean && a.rev == rev && self.chain_dispatched(id, a, &members[chain..k]);
            if fenced(i) || steps[i].ahead.is_some_and(|a| !held(a)) {
                self.outcomes[i] = TransitionOutcome::Fenced;
                continue;
            }
            let writes = decide(i, snapshot);
            if writes.is_empty() {
                self.outcomes[i] = TransitionOutcome::Unchanged;
                continue;
            }
            if !absorb(snapshot, &writes) && !self.incomplete.contains(&id) {
                self.incomplete.push(id);
            }
            let offset = self.batch.add(id, workflow, &writes);
            if let Some(u) = &writes.instance {
                self.updates.push((id, u.clone()));
            }
            if self.written.last() != Some(&id) {
                self.written.push(id);
                snapshot.instance.rev += 1;
            }
            let drops_work = writes.clear_work || !writes.ended_attempts.is_empty();
            self.applied[i] = Some((writes, offset));
            applied_any = true;
            if let Some(ahead) = steps[i].ahead {
                // Dispatched and ended in this batch: neither written nor launched.
                self.batch.work.retain(|(instance, _, w)| !(*instance == id && ahead.is_run(w)));
            }
            if drops_work || steps[i].ahead.is_some() {
                self.forget_unwritten(id, &members[..k]);
            }
        }
    }

    /// Whether a step of the chain (`chain`: its steps so far) dispatched the attempt run
    /// ahead, and the batch still writes that dispatch.
    fn chain_dispatched(&self, instance: Uuid, ahead: &Ahead, chain: &[usize]) -> bool {
        let dispatched = |j: &usize| {
            self.applied[*j].as_ref().is_some_and(|(writes, _)| writes.new_work.iter().any(|w| ahead.is_run(w)))
        };
        chain.iter().any(dispatched) && self.batch.work.iter().any(|(i, _, w)| *i == instance && ahead.is_run(w))
    }

    /// Takes the work the batch no longer writes (a later step ended or cleared it, or ran it
    /// ahead) out of the earlier steps' writes: what a step says it wrote is what the batch
    /// writes, and an attempt never written is never launched after the commit.
    fn forget_unwritten(&mut self, instance: Uuid, earlier: &[usize]) {
        let written = std::mem::take(&mut self.batch.work);
        for &j in earlier {
            if let Some((writes, _)) = &mut self.applied[j] {
                writes.new_work.retain(|w| written.iter().any(|(i, _, kept)| *i == instance && kept == w));
            }
        }
        self.batch.work = written;
    }

    /// Each step's outcome once the batch is written (`first_seq`: where each instance's new
    /// history entries begin).
    pub fn outcomes(self, steps: &[Step<'_>], first_seq: &HashMap<Uuid, i64>) -> Vec<TransitionOutcome> {
        let mut outcomes = self.outcomes;
        for (i, step) in self.applied.into_iter().enumerate() {
            let Some((mut writes, offset)) = step else { continue };
            if !writes.events.is_empty() {
                writes.first_seq = first_seq.get(&steps[i].instance).map(|first| first + offset as i64);
            }
            outcomes[i] = TransitionOutcome::Applied(Box::new(writes));
        }
        outcomes
    }

    /// The `seq` of each instance's last history entry after the batch, given it before.
    pub fn last_seqs(&self, before: &HashMap<Uuid, i64>, first_seq: &HashMap<Uuid, i64>) -> HashMap<Uuid, i64> {
        let mut last = before.clone();
        for (id, _, entries) in &self.batch.events {
            if let Some(first) = first_seq.get(id) {
                last.insert(*id, first + entries.len() as i64 - 1);
            }
        }
        last
    }
}

/// Brings `snapshot` up to date with `writes`, as reading it back after writing them would:
/// the next step of the same instance in the batch decides on it. False if `writes` holds a
/// node row the snapshot has none for (it is then not what reading it back would give).
pub fn absorb(snapshot: &mut Snapshot, writes: &Writes) -> bool {
    if let Some(u) = &writes.instance {
        let row = &mut snapshot.instance;
        if u.restart {
            row.run += 1;
            (row.output, row.error, row.started_at, row.ended_at) = (None, None, None, None);
        }
        row.status = u.status;
        if let Some(output) = &u.output {
            row.output = Some(sqlx::types::Json(output.clone()));
        }
        if u.error.is_some() {
            row.error = u.error.clone();
        }
        // Given, it replaces the stored one (a queued retry's admission: `UPDATE_INSTANCE`).
        row.started_at = u.started_at.or(row.started_at);
        if u.ended_at.is_some() {
            row.ended_at = u.ended_at;
        }
    }
    let mut complete = true;
    for new in &writes.nodes {
        // Found by position first: a wide dispatch searching every row for every node it
        // starts was quadratic.
        match snapshot.index_of(&new.node_id, new.position) {
            Some(at) => snapshot.nodes[at] = Arc::new(new.clone()),
            None => complete = false,
        }
    }
    complete
}

/// The steps' indexes grouped by instance, instances in id order: the order a batch locks
/// them in, so two batches (of two processes) never wait for each other in a cycle. Within
/// an instance the steps keep their order.
pub fn by_instance(steps: &[Step<'_>]) -> Vec<(Uuid, Vec<usize>)> {
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| (steps[i].instance, i));
    let mut groups: Vec<(Uuid, Vec<usize>)> = Vec::new();
    for i in order {
        match groups.last_mut() {
            Some((id, members)) if *id == steps[i].instance => members.push(i),
            _ => groups.push((steps[i].instance, vec![i])),
        }
    }
    groups
}

#[cfg(test)]
mod tests;
