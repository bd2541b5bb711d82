//! Finishes closes a crash left half done: an approval closed (by a decision or its timeout)
//! whose node still waits on its attempt gets its node's event. Every process sweeps; the
//! event applies once, whoever commits it first.

use super::super::commands::Commands;
use crate::store::ApprovalStore;
use std::sync::Arc;
use std::time::Duration;

/// How often closed approvals whose node still waits are looked for.
const EVERY: Duration = Duration::from_secs(5);
/// Approvals finished per sweep.
const BATCH: i64 = 200;

pub struct ApprovalSweep {
    pub(in crate::engine) approvals: Arc<dyn ApprovalStore>,
    pub(in crate::engine) commands: Arc<Commands>,
}

impl ApprovalSweep {
    pub async fn run(self, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(EVERY) => {}
                _ = shutdown.changed() => return,
            }
            if *shutdown.borrow() {
                return;
            }
            self.once().await;
        }
    }

    /// One pass: each approval closed while its node waits gets its node's event.
    pub async fn once(&self) {
        let rows = match self.approvals.closed_but_waiting(BATCH).await {
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
