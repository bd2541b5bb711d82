//! Group commit: requests that arrive while a transaction is being written wait together, and
//! whoever finds a lane free writes every request waiting in one batch. A lone request is
//! written at once (a batch of one); under load, the requests that came during one
//! transaction share the next: one commit, and one hold of each lock, for all of them.

use crate::store::StoreError;
use std::future::Future;
use std::sync::Mutex;
use tokio::sync::{oneshot, Semaphore};

/// A request waiting for its batch, and where its answer goes.
pub(super) struct Waiting<R, A> {
    pub request: R,
    pub answer: oneshot::Sender<A>,
}

pub(super) struct GroupCommit<R, A> {
    waiting: Mutex<Vec<Waiting<R, A>>>,
    lanes: Semaphore,
    most_per_batch: usize,
}

impl<R, A> GroupCommit<R, A> {
    /// `lanes` batches written at once (one on SQLite, whose one writer a second would only
    /// wait for; on Postgres one fills while another commits), at most `most_per_batch` each.
    pub(super) fn new(lanes: usize, most_per_batch: usize) -> Self {
        GroupCommit { waiting: Mutex::default(), lanes: Semaphore::new(lanes.max(1)), most_per_batch }
    }

    /// Queues `request` and writes batches with `write` (which answers each of its batch)
    /// until this one is answered. `None`: its batch ended without answering it (its writer
    /// was dropped part way or panicked).
    pub(super) async fn together<F, Fut>(&self, request: R, write: F) -> Option<A>
    where
        F: Fn(Vec<Waiting<R, A>>) -> Fut,
        Fut: Future<Output = ()>,
    {
        let (answer, mut answered) = oneshot::channel();
        self.waiting.lock().expect("group commit").push(Waiting { request, answer });
        loop {
            // Written by whoever had a lane first, or by this call once it gets one: whatever
            // waits then goes in one batch, so requests pile up while the lanes are busy and
            // the next batch takes them all.
            let lane = tokio::select! {
                biased;
                answer = &mut answered => return answer.ok(),
                lane = self.lanes.acquire() => lane.expect("the lanes are never closed"),
            };
            let batch = {
                let mut waiting = self.waiting.lock().expect("group commit");
                let taken = waiting.len().min(self.most_per_batch);
                let rest = waiting.split_off(taken);
                std::mem::replace(&mut *waiting, rest)
            };
            if batch.is_empty() {
                // This request is in a batch another lane is writing: wait for its answer
                // rather than take the free lane again and again.
                drop(lane);
                return answered.await.ok();
            }
            write(batch).await;
            drop(lane);
        }
    }
}

/// Writes a batch's requests: all in one transaction, or one alone.
#[async_trait::async_trait]
pub(super) trait BatchWriter<R: Sync, T> {
    async fn all(&self, requests: &[&R]) -> Result<Vec<T>, StoreError>;
    async fn one(&self, request: &R) -> Result<T, StoreError>;
}

/// Answers `batch` in one transaction (`BatchWriter::all`). When that fails for a reason of
/// the batch's own (not the database's), nothing was written: each request is written alone,
/// so one request's trouble is its answer alone. When the database failed, the first request
/// gets the error and the rest share it.
pub(super) async fn answer_batch<R: Sync, T>(
    writer: &(impl BatchWriter<R, T> + Sync),
    batch: Vec<Waiting<R, Result<T, StoreError>>>,
) {
    let requests: Vec<&R> = batch.iter().map(|w| &w.request).collect();
    match writer.all(&requests).await {
        Ok(answers) => {
            for (waiting, answer) in batch.into_iter().zip(answers) {
                let _ = waiting.answer.send(Ok(answer));
            }
        }
        Err(e) if batch.len() > 1 && e.trouble().is_none() => {
            tracing::debug!(error = %e, requests = batch.len(), "a batch failed; writing its requests one by one");
            for waiting in batch {
                let answer = writer.one(&waiting.request).await;
                let _ = waiting.answer.send(answer);
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

/// The error a request shares with the batch whose transaction failed for want of the
/// database (answered 503 with `Retry-After`, as that trouble is on its own).
pub(super) fn unavailable(message: &str) -> StoreError {
    StoreError::Database(sqlx::Error::Io(std::io::Error::other(message.to_owned())))
}
