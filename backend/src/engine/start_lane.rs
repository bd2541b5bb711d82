//! Group commit for starts: a start without a business key waits here
//! with the others that arrive at the same moment, and whoever finds a lane free writes every
//! start waiting in one store transaction (`InstanceStore::start_instances`). A lone start
//! is written at once (a batch of one); under load, the starts that came while a transaction
//! was being written share the next one: one commit, and for a limited workflow one hold of
//! its lock, for all of them.

use crate::store::{InstanceStore, NewInstance, StartOutcome, StoreError};
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, Semaphore};

/// The most starts in one transaction; more wait for the next one.
const MOST_PER_BATCH: usize = 256;

type Answer = Result<StartOutcome, StoreError>;

struct Waiting {
    new: NewInstance,
    answer: oneshot::Sender<Answer>,
}

pub(super) struct StartLane {
    store: Arc<dyn InstanceStore>,
    waiting: Mutex<Vec<Waiting>>,
    lanes: Semaphore,
}

/// Whether a start may share a transaction with others: one with a business key may be
/// refused by the key's rules after its rows are in, which would need its own transaction
/// rolled back. (One with an Idempotency-Key claims it first, and a repeat writes nothing.)
pub(super) fn batchable(new: &NewInstance) -> bool {
    new.row.business_key.is_none()
}

impl StartLane {
    /// `lanes` start transactions written at once: as many as the commit lanes (one on SQLite,
    /// whose one writer a second would only wait for; on Postgres one fills while another
    /// commits).
    pub(super) fn new(store: Arc<dyn InstanceStore>, lanes: usize) -> StartLane {
        StartLane { store, waiting: Mutex::default(), lanes: Semaphore::new(lanes.max(1)) }
    }

    /// Writes `new` together with whatever other starts are waiting, and answers as
    /// `start_instance` would have.
    /// Called from the start's own task (`Commands::start`), which no caller going away cuts
    /// short, so the others' answers never depend on a request staying open.
    pub(super) async fn start_together(&self, new: &NewInstance) -> Answer {
        let (answer, mut answered) = oneshot::channel();
        self.waiting.lock().expect("start lane").push(Waiting { new: new.clone(), answer });
        loop {
            // Written by whoever had a lane first, or by this call once it gets one: whatever
            // waits then goes in one transaction, so starts pile up while the lanes are busy
            // and the next transaction takes them all.
            let lane = tokio::select! {
                biased;
                answer = &mut answered => return answer.unwrap_or_else(|_| Err(unanswered())),
                lane = self.lanes.acquire() => lane.expect("the start lanes are never closed"),
            };
            let batch = {
                let mut waiting = self.waiting.lock().expect("start lane");
                let taken = waiting.len().min(MOST_PER_BATCH);
                let rest = waiting.split_off(taken);
                std::mem::replace(&mut *waiting, rest)
            };
            if !batch.is_empty() {
                self.write_starts(batch).await;
            }
            drop(lane);
        }
    }

    async fn write_starts(&self, batch: Vec<Waiting>) {
        let news: Vec<&NewInstance> = batch.iter().map(|w| &w.new).collect();
        match self.store.start_instances(&news).await {
            Ok(outcomes) => {
                for (waiting, outcome) in batch.into_iter().zip(outcomes) {
                    let _ = waiting.answer.send(Ok(outcome));
                }
            }
            // Nothing was written (the transaction rolled back): each start on its own, so one
            // start's trouble (its workflow deleted meanwhile, say) is its answer alone.
            Err(e) if batch.len() > 1 && e.trouble().is_none() => {
                tracing::debug!(error = %e, starts = batch.len(), "a batch of starts failed; writing them one by one");
                for waiting in batch {
                    let outcome = self.store.start_instance(&waiting.new).await;
                    let _ = waiting.answer.send(outcome);
                }
            }
            Err(e) => {
                let message = e.to_string();
                let mut batch = batch.into_iter();
                if let Some(first) = batch.next() {
                    let _ = first.answer.send(Err(e));
                }
                for waiting in batch {
                    let _ = waiting.answer.send(Err(unavailable(&message)));
                }
            }
        }
    }
}

/// A start whose batch ended without answering it (its writer panicked).
fn unanswered() -> StoreError {
    unavailable("the start's transaction ended without an answer")
}

/// The error a start shares with the batch whose transaction failed for want of the database
/// (answered 503 with `Retry-After`, as that trouble is on its own).
fn unavailable(message: &str) -> StoreError {
    StoreError::Database(sqlx::Error::Io(std::io::Error::other(message.to_owned())))
}
