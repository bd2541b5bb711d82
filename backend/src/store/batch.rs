//! Group commit, the pure half: what the steps of one batch write, gathered so that each kind
//! of row is written once per batch (one upsert of node rows, one insert of work items, one
//! of history entries) while the outcome is what applying the steps one after another would
//! have written. The SQL half is `transition_sql.rs`.

use super::engine_records::{Fence, InstanceUpdate, NewEvent, NewWork, NodeRow, Snapshot, TransitionOutcome, Writes};
use super::WorkKind;
use std::collections::HashMap;
use uuid::Uuid;

/// One state change of a batch: an event for `instance`, consuming the fenced work item.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    pub instance: Uuid,
    pub fence: Option<&'a Fence>,
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
                !(*i == instance
                    && w.node_id.as_deref() == Some(node.as_str())
                    && w.attempt == Some(*attempt)
                    && w.kind != WorkKind::Retry)
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
            let Some(snapshot) = snapshots.get_mut(id) else { continue };
            let workflow = snapshot.instance.workflow_id;
            for &i in members {
                if fenced(i) {
                    d.outcomes[i] = TransitionOutcome::Fenced;
                    continue;
                }
                let writes = decide(i, snapshot);
                if writes.is_empty() {
                    d.outcomes[i] = TransitionOutcome::Unchanged;
                    continue;
                }
                if !absorb(snapshot, &writes) && !d.incomplete.contains(id) {
                    d.incomplete.push(*id);
                }
                let offset = d.batch.add(*id, workflow, &writes);
                if let Some(u) = &writes.instance {
                    d.updates.push((*id, u.clone()));
                }
                if d.written.last() != Some(id) {
                    d.written.push(*id);
                    snapshot.instance.rev += 1;
                }
                d.applied[i] = Some((writes, offset));
            }
        }
        d
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
        row.started_at = row.started_at.or(u.started_at);
        if u.ended_at.is_some() {
            row.ended_at = u.ended_at;
        }
    }
    let mut complete = true;
    for new in &writes.nodes {
        match snapshot.nodes.iter_mut().find(|r| r.node_id == new.node_id) {
            Some(row) => *row = new.clone(),
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
mod tests {
    use super::*;
    use crate::engine::effects::work;
    use chrono::Utc;

    fn ids() -> (Uuid, Uuid) {
        (Uuid::now_v7(), Uuid::now_v7())
    }

    #[test]
    fn an_ended_attempt_drops_the_work_an_earlier_step_added_for_it_but_not_its_retry() {
        let (instance, workflow) = ids();
        let mut batch = BatchWrites::default();
        let mut first = Writes::default();
        first.new_work.push(work(WorkKind::NodeTimeout, Some("a"), Some(1), Utc::now()));
        first.new_work.push(work(WorkKind::Retry, Some("a"), Some(1), Utc::now()));
        first.new_work.push(work(WorkKind::Run, Some("b"), Some(1), Utc::now()));
        batch.add(instance, workflow, &first);
        let ended = Writes { ended_attempts: vec![("a".into(), 1)], ..Writes::default() };
        batch.add(instance, workflow, &ended);
        let kinds: Vec<_> = batch.work.iter().map(|(_, _, w)| (w.kind, w.node_id.clone())).collect();
        assert_eq!(kinds, vec![(WorkKind::Retry, Some("a".into())), (WorkKind::Run, Some("b".into()))]);
        assert_eq!(batch.ended, vec![(instance, "a".to_owned(), 1)]);
    }

    #[test]
    fn clearing_an_instance_drops_only_its_own_earlier_work_and_keeps_later_work() {
        let (instance, workflow) = ids();
        let other = Uuid::now_v7();
        let mut batch = BatchWrites::default();
        let adds = |node: &str| Writes {
            new_work: vec![work(WorkKind::Run, Some(node), Some(1), Utc::now())],
            ..Writes::default()
        };
        batch.add(instance, workflow, &adds("a"));
        batch.add(other, workflow, &adds("x"));
        batch.add(instance, workflow, &Writes { clear_work: true, ..Writes::default() });
        batch.add(instance, workflow, &adds("c"));
        let left: Vec<_> = batch.work.iter().map(|(i, _, w)| (*i, w.node_id.clone().unwrap())).collect();
        assert_eq!(left, vec![(other, "x".to_owned()), (instance, "c".to_owned())]);
    }

    #[test]
    fn a_node_written_twice_is_written_once_with_its_last_row_and_entries_keep_step_order() {
        let (instance, workflow) = ids();
        let mut batch = BatchWrites::default();
        let row = |status| NodeRow::fresh("a".into(), 0, status);
        let entry = |n: i64| NewEvent {
            kind: trellis_model::trace::EventKind::Node,
            at: Utc::now(),
            data: serde_json::json!({ "n": n }),
        };
        let first = Writes {
            nodes: vec![row(trellis_model::NodeStatus::Running)],
            events: vec![entry(1)],
            ..Writes::default()
        };
        let second = Writes {
            nodes: vec![row(trellis_model::NodeStatus::Succeeded)],
            events: vec![entry(2), entry(3)],
            ..Writes::default()
        };
        assert_eq!(batch.add(instance, workflow, &first), 0);
        assert_eq!(batch.add(instance, workflow, &second), 1);
        assert_eq!(batch.nodes.len(), 1);
        assert_eq!(batch.nodes[0].1.status, trellis_model::NodeStatus::Succeeded);
        let numbers: Vec<_> = batch.events[0].2.iter().map(|e| e.data["n"].as_i64().unwrap()).collect();
        assert_eq!(numbers, vec![1, 2, 3]);
    }

    #[test]
    fn steps_are_grouped_by_instance_in_id_order_keeping_each_instances_order() {
        let (low, high) = ids();
        let steps = [
            Step { instance: high, fence: None },
            Step { instance: low, fence: None },
            Step { instance: high, fence: None },
        ];
        assert_eq!(by_instance(&steps), vec![(low, vec![1]), (high, vec![0, 2])]);
    }
}
