//! Group commit for starts (`group_commit.rs`): a start without a business key waits here
//! with the others that arrive at the same moment, and they are written in one store
//! transaction (`InstanceStore::start_instances`): one commit, and for a limited workflow one
//! hold of its lock, for all of them.

use super::group_commit::{answer_batch, unavailable, BatchWriter, GroupCommit, Waiting};
use crate::store::{InstanceStore, NewInstance, StartOutcome, StoreError};
use std::sync::Arc;

/// The most starts in one transaction; more wait for the next one.
const MOST_PER_BATCH: usize = 256;

type Answer = Result<StartOutcome, StoreError>;

pub(super) struct StartLane {
    store: Arc<dyn InstanceStore>,
    group: GroupCommit<NewInstance, Answer>,
}

/// Whether a start may share a transaction with others: one with a business key may be
/// refused by the key's rules after its rows are in, which would need its own transaction
/// rolled back. (One with an Idempotency-Key claims it first, and a repeat writes nothing.)
pub(super) fn batchable(new: &NewInstance) -> bool {
    new.row.business_key.is_none()
}

impl StartLane {
    /// `lanes` start transactions written at once: as many as the commit lanes.
    pub(super) fn new(store: Arc<dyn InstanceStore>, lanes: usize) -> StartLane {
        StartLane { store, group: GroupCommit::new(lanes, MOST_PER_BATCH) }
    }

    /// Writes `new` together with whatever other starts are waiting, and answers as
    /// `start_instance` would have.
    /// Called from the start's own task (`Commands::start`), which no caller going away cuts
    /// short, so the others' answers never depend on a request staying open.
    pub(super) async fn start_together(&self, new: &NewInstance) -> Answer {
        let answer = self.group.together(new.clone(), |batch| self.write_starts(batch)).await;
        answer.unwrap_or_else(|| Err(unanswered()))
    }

    async fn write_starts(&self, batch: Vec<Waiting<NewInstance, Answer>>) {
        answer_batch(self, batch).await;
    }
}

#[async_trait::async_trait]
impl BatchWriter<NewInstance, StartOutcome> for StartLane {
    async fn all(&self, news: &[&NewInstance]) -> Result<Vec<StartOutcome>, StoreError> {
        self.store.start_instances(news).await
    }

    async fn one(&self, new: &NewInstance) -> Answer {
        self.store.start_instance(new).await
    }
}

/// A start whose batch ended without answering it (its writer panicked).
fn unanswered() -> StoreError {
    unavailable("the start's transaction ended without an answer")
}
