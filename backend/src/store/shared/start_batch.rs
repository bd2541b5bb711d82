//! Starts written together (`InstanceStore::start_instances`): the starts waiting at one moment
//! share one transaction, so one commit (one flush) and, per limited workflow, one hold of the
//! workflow's lock instead of one of each per start. Each start is decided and written as
//! `start_instance` would write it on its own, one after another in the batch's order, so the
//! limits hold exactly as they do for single starts (across processes too: the lock and the
//! counts are the database's). Only starts without an Idempotency-Key or a business key come
//! here: those can refuse or repeat in ways a shared transaction could not undo for one alone.

use super::Store;
use crate::store::backend::Backend;
use crate::store::engine_records::{NewInstance, StartOutcome};
use crate::store::phases::PHASES;
use crate::store::Result;

impl Store {
    pub(super) async fn start_batch_once(&self, news: &[&NewInstance]) -> Result<Vec<StartOutcome>> {
        debug_assert!(news.iter().all(|n| n.idempotency.is_none() && n.row.business_key.is_none()));
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // Workflows in id order (the order their locks are taken in, so two batches cannot
        // deadlock on them); each workflow's starts oldest first, the order admission takes
        // its queue in.
        let mut order: Vec<usize> = (0..news.len()).collect();
        order.sort_by_key(|&i| (news[i].row.workflow_id, news[i].row.id));
        let mut outcomes = vec![StartOutcome::Queued; news.len()];
        let mut appended = vec![0; news.len()];
        for i in order {
            let new = news[i];
            let row = &new.row;
            let mut outcome = StartOutcome::Running;
            if new.limits.any() {
                // Earlier starts of this batch are already in the counts: those admitted run,
                // those queued wait ahead of this one.
                let key = row.concurrency_key.as_deref();
                if let Some(held) = Self::held_back(&mut tx, row.workflow_id, new.limits, key, row.id).await? {
                    if new.limits.reject {
                        outcomes[i] = StartOutcome::Rejected(held);
                        continue;
                    }
                    outcome = StartOutcome::Queued;
                }
            }
            Self::insert_instance_rows(&mut tx, new).await?;
            appended[i] = self.write_start(&mut tx, new, &outcome).await?;
            outcomes[i] = outcome;
        }
        tx.commit().await?;
        PHASES.transaction();
        PHASES.started_together(news.len());
        for ((new, outcome), appended) in news.iter().zip(&outcomes).zip(appended) {
            self.remember_start(new, outcome, appended);
        }
        Ok(outcomes)
    }
}
