//! Admitting queued instances into free slots: after a transition finished an instance of a
//! limited workflow (step 5 of `commit.rs`), and in a periodic sweep.

use super::effects::{decide, Detail};
use super::machine::Event;
use super::Engine;
use crate::store::{Snapshot, Writes};
use chrono::Utc;
use uuid::Uuid;

impl Engine {
    /// Admits queued instances of every workflow into free slots (a periodic sweep that
    /// also covers a process that died between finishing an instance and admitting).
    pub(super) async fn admit_everywhere(&self) {
        match self.store.workflows_with_queued().await {
            Ok(workflows) => {
                for workflow in workflows {
                    self.admit(workflow).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "admission sweep failed"),
        }
    }

    pub(super) async fn admit(&self, workflow: Uuid) {
        if let Err(e) = self.try_admit(workflow).await {
            tracing::warn!(error = %e, %workflow, "admitting queued instances failed");
        }
    }

    async fn try_admit(&self, workflow: Uuid) -> anyhow::Result<()> {
        let Some(record) = self.store.get_workflow(workflow).await? else { return Ok(()) };
        let Some(latest) = record.latest_version else { return Ok(()) };
        // Admission decides inside the store's transaction, without awaiting: load every
        // version's plan first.
        let mut plans = std::collections::HashMap::new();
        for v in 1..=latest {
            plans.insert(v, self.plan(workflow, v).await?);
        }
        let limits = plans[&latest].admission();
        let now = Utc::now();
        let from_queue = Detail { from_queue: true, ..Detail::default() };
        let start = |s: &Snapshot| match plans.get(&s.instance.version) {
            Some(plan) => decide(plan, s, Event::Start, &from_queue, now, 0.0),
            None => Writes::default(),
        };
        let admitted = self.store.admit_queued(workflow, limits, &start).await?;
        for (instance, writes) in &admitted {
            if let Some(first) = writes.first_seq {
                self.bus.committed(*instance, workflow, first, &writes.events);
            }
        }
        if !admitted.is_empty() {
            self.wake.notify_one();
        }
        Ok(())
    }
}
