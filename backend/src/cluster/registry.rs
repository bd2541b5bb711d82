//! This process in the `processes` table: registered at start, a heartbeat every few seconds
//! (which also reads whether the database is held), marked draining on SIGTERM and removed once
//! stopped. A killed process leaves its row, which stops being `alive` after [`ALIVE_WITHIN`]
//! and is pruned after a day.

use super::{Hold, ALIVE_WITHIN, HEARTBEAT_EVERY, RELEASE};
use crate::store::{ClusterStore, ProcessRow};
use chrono::Utc;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Rows of processes not seen for this long are deleted.
const FORGET_AFTER: chrono::Duration = chrono::Duration::days(1);

pub struct Registry {
    store: Arc<dyn ClusterStore>,
    me: ProcessRow,
    hold: Hold,
    every: Duration,
}

impl Registry {
    /// Registers this process (`id`: the engine's lease name) and reads the hold into `hold`.
    pub async fn join(
        store: Arc<dyn ClusterStore>,
        id: &str,
        listen: SocketAddr,
        backend: &str,
        hold: Hold,
    ) -> anyhow::Result<Registry> {
        let now = Utc::now();
        let me = ProcessRow {
            id: id.to_owned(),
            version: RELEASE.to_owned(),
            schema_known: crate::store::newest_migration(backend),
            host: crate::engine::hostname(),
            pid: i64::from(std::process::id()),
            listen: listen.to_string(),
            started_at: now,
            last_seen: now,
            draining: false,
        };
        store.register_process(&me).await?;
        let registry = Registry { store, me, hold, every: HEARTBEAT_EVERY };
        registry.read_hold().await?;
        if registry.hold.is_held() {
            let state = registry.store.hold_state().await?;
            tracing::warn!(
                reason = state.held_reason.as_deref().unwrap_or("held"),
                "this database is HELD: no schedule fires and no work is claimed until an admin resumes it \
                 (the Cluster page, `trellis cluster resume` or POST /api/v1/cluster/resume)"
            );
        }
        Ok(registry)
    }

    /// Stamps heartbeats until `finished` (every loop of the process has stopped), marked
    /// draining from `shutdown` on, so a long drain never looks like a dead process.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>, mut finished: watch::Receiver<bool>) -> Registry {
        while !*finished.borrow() {
            tokio::select! {
                _ = tokio::time::sleep(self.every) => {}
                _ = shutdown.changed(), if !*shutdown.borrow() => {}
                _ = finished.changed() => continue,
            }
            let draining = *shutdown.borrow();
            if let Err(e) = self.beat(draining).await {
                tracing::warn!(error = %e, "could not write this process's heartbeat; trying again shortly");
            }
        }
        self
    }

    /// Removes this process's row: it has stopped.
    pub async fn leave(&self) {
        if let Err(e) = self.store.remove_process(&self.me.id).await {
            tracing::warn!(error = %e, "could not remove this process from the cluster's list; it will go stale");
        }
    }

    async fn beat(&self, draining: bool) -> anyhow::Result<()> {
        let now = Utc::now();
        if !self.store.heartbeat(&self.me.id, now, draining).await? {
            // Pruned during a long pause, or the table was restored under us: write it again.
            self.store.register_process(&ProcessRow { last_seen: now, draining, ..self.me.clone() }).await?;
        }
        self.read_hold().await?;
        self.store.prune_processes(now - FORGET_AFTER).await?;
        self.store.fail_orphaned_backups(now, now - ALIVE_WITHIN).await?;
        Ok(())
    }

    /// Holds this process while the database is held, or while it was migrated past what this
    /// release can run beside (`super::compat`), saying why.
    async fn read_hold(&self) -> anyhow::Result<()> {
        let state = self.store.hold_state().await?;
        let too_old = super::compat::too_old(self.me.schema_known, state.compatible_from);
        if let Some(why) = &too_old {
            tracing::error!("claiming no work: {why}");
        }
        let held = state.held || too_old.is_some();
        if held != self.hold.is_held() {
            tracing::info!(held, "this process's hold changed");
        }
        self.hold.set(held);
        Ok(())
    }
}

/// Whether a row's heartbeat is recent enough for its process to be taken for alive.
pub fn is_alive(process: &ProcessRow, now: chrono::DateTime<Utc>) -> bool {
    now - process.last_seen < ALIVE_WITHIN
}
