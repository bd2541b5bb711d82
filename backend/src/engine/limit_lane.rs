//! Shared limits' places asked for and given back together (`group_commit.rs`): the attempts
//! that ask at the same moment, and those that give back, share one store transaction
//! (`LimitStore::limit_requests`), so a limit's row is locked and its places counted once for
//! all of them rather than once each.

use super::group_commit::{answer_batch, BatchWriter, GroupCommit, Waiting};
use crate::store::{LimitAnswer, LimitRequest, LimitStore, StoreError};
use std::sync::Arc;

/// The most requests in one transaction; more wait for the next one.
const MOST_PER_BATCH: usize = 256;

type Answer = Result<LimitAnswer, StoreError>;

pub(super) struct LimitLane {
    store: Arc<dyn LimitStore>,
    group: GroupCommit<LimitRequest, Answer>,
}

impl LimitLane {
    /// `lanes` transactions written at once: as many as the commit lanes.
    pub(super) fn new(store: Arc<dyn LimitStore>, lanes: usize) -> LimitLane {
        LimitLane { store, group: GroupCommit::new(lanes, MOST_PER_BATCH) }
    }

    /// `request`, written with whatever others wait.
    pub(super) async fn ask(&self, request: LimitRequest) -> Answer {
        match self.group.together(request.clone(), |batch| self.write(batch)).await {
            Some(answer) => answer,
            // Its batch's writer went away part way (its caller's future was dropped). Asked
            // again alone: a holder's place is its own row, so this never lets more through;
            // if that batch had committed, a rate counts one mark more than calls made.
            None => self.alone(&request).await,
        }
    }

    async fn write(&self, batch: Vec<Waiting<LimitRequest, Answer>>) {
        answer_batch(self, batch).await;
    }

    async fn alone(&self, request: &LimitRequest) -> Answer {
        let mut answers = self.store.limit_requests(std::slice::from_ref(request)).await?;
        Ok(answers.pop().expect("one answer for one request"))
    }
}

#[async_trait::async_trait]
impl BatchWriter<LimitRequest, LimitAnswer> for LimitLane {
    async fn all(&self, requests: &[&LimitRequest]) -> Result<Vec<LimitAnswer>, StoreError> {
        let owned: Vec<LimitRequest> = requests.iter().map(|r| (*r).clone()).collect();
        self.store.limit_requests(&owned).await
    }

    async fn one(&self, request: &LimitRequest) -> Answer {
        self.alone(request).await
    }
}
