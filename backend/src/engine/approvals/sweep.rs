//! Finishes closes a crash left half done: an approval closed (by a decision or its timeout)
//! whose node still waits on its attempt gets its node's event. Every process sweeps; the
//! event applies once, whoever commits it first. It also marks `canceled` the open approvals
//! whose run moved on, so that the inbox's queries read few open rows. Nothing is swept while
//! the database is held (a restored copy, until an admin resumes it).

use super::super::commands::Commands;
use crate::store::ApprovalStore;
use std::sync::Arc;
use std::time::Duration;

/// How often closed approvals whose node still waits are looked for.
const EVERY: Duration = Duration::from_secs(5);
/// Approvals finished per sweep.
const BATCH: i64 = 200;
/// How far back a close is looked at after a process's first pass: the sweep runs every few
/// seconds in every process, so a close cut short by a crash is found long before this. The
/// first pass, and the first after a hold is lifted (a restored copy), look at every close.
const LOOK_BACK: chrono::Duration = chrono::Duration::days(1);

pub struct ApprovalSweep {
    pub(in crate::engine) approvals: Arc<dyn ApprovalStore>,
    pub(in crate::engine) commands: Arc<Commands>,
    pub(in crate::engine) hold: crate::cluster::Hold,
}

impl ApprovalSweep {
    pub async fn run(self, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut whole = true;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(EVERY) => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                return;
            }
            if !self.hold.pass(&mut shutdown).await {
                whole = true;
                continue;
            }
            self.once(whole).await;
            whole = false;
        }
    }

    /// One pass: each approval closed while its node waits (since `LOOK_BACK`, or ever when
    /// `whole`) gets its node's event.
    pub async fn once(&self, whole: bool) {
        if let Err(e) = self.approvals.cancel_dead_approvals(BATCH).await {
            tracing::warn!(error = %e, "marking the approvals of runs that moved on failed; retrying shortly");
        }
        let since = match whole {
            true => chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            false => chrono::Utc::now() - LOOK_BACK,
        };
        let rows = match self.approvals.closed_but_waiting(since, BATCH).await {
            Ok(rows) => rows,
            Err(e) => return tracing::warn!(error = %e, "looking for closed approvals failed; retrying shortly"),
        };
        for row in rows {
            if let Err(e) = self.commands.close_node(&row, row.status()).await {
                tracing::warn!(error = %e, approval = %row.id, "moving a closed approval's node on failed; retrying");
            }
        }
    }
}
