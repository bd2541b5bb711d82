//! Postgres: the production backend, shared by any number of `trellis serve` processes.

use super::backend::Backend;
use super::notice::{self, Appended, Notice};
use super::Result;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::mpsc::Receiver;
use uuid::Uuid;

pub struct PgStore {
    pool: PgPool,
    /// Names this store (this process) in its announcements, so its listener skips them.
    origin: Uuid,
}

impl PgStore {
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(url)?.application_name("trellis");
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            // While the database is away a request waits this long for a connection, then
            // is answered 503 with `Retry-After`; busy pools hand connections over in ms.
            .acquire_timeout(Duration::from_secs(5))
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", super::redact_url(url)))?;
        // Migrations take an advisory lock, so processes starting together apply them once.
        sqlx::migrate!("../migrations/postgres").run(&pool).await?;
        Ok(PgStore { pool, origin: Uuid::now_v7() })
    }
}

/// The store type the shared SQL (`shared/`) is implemented for in this backend.
type Store = PgStore;

// Loaded by both backends on purpose: one SQL body, type-checked against each driver.
#[allow(clippy::duplicate_mod)]
#[path = "shared/mod.rs"]
mod shared;

impl Backend for PgStore {
    type Db = sqlx::Postgres;
    /// Postgres serializes conflicting writers itself (row locks); nothing to hold here.
    type WriteGuard<'a> = ();

    const NAME: &'static str = "postgres";
    /// `NO KEY UPDATE`, not `UPDATE`: rows that reference a workflow or an instance (idempotency
    /// records, nodes, history, work) take a key-share lock on it through their foreign key, which
    /// `FOR UPDATE` conflicts with and `FOR NO KEY UPDATE` does not. With `FOR UPDATE`, two keyed
    /// starts that had each inserted their idempotency record deadlocked asking for the workflow's
    /// admission lock. Two `FOR NO KEY UPDATE`s still exclude each other, which is all admission
    /// and transitions need; keys are never updated.
    const LOCK_ROW: &'static str = " FOR NO KEY UPDATE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const NEWEST_ID: &'static str = "MAX(id::text)::uuid";
    const EPOCH_OF: &'static str = "EXTRACT(EPOCH FROM {})";
    const FLOOR: &'static str = "FLOOR";
    const NOTIFY_EVENTS: Option<(&'static str, &'static str)> =
        Some(("SELECT pg_notify('trellis_events', p) FROM json_array_elements_text(", "::json) AS p"));

    fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn origin(&self) -> Uuid {
        self.origin
    }

    async fn write_guard(&self) {}

    /// LISTENs on its own connection and forwards other processes' announcements. When the
    /// connection drops, sqlx reconnects; what was announced meanwhile is lost, which the
    /// receiver is told (`Notice::Gap`) so it rereads the history.
    async fn listen_for_notices(&self) -> Result<Option<Receiver<Notice>>> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen(notice::CHANNEL).await?;
        let (sender, receiver) = tokio::sync::mpsc::channel(4_096);
        let origin = self.origin;
        tokio::spawn(async move {
            loop {
                let notice = match listener.try_recv().await {
                    Ok(Some(n)) => match serde_json::from_str::<Appended>(n.payload()) {
                        Ok(appended) if appended.origin == origin => continue,
                        Ok(appended) => Notice::Appended(appended),
                        Err(e) => {
                            tracing::warn!(error = %e, "ignoring a malformed event announcement");
                            continue;
                        }
                    },
                    Ok(None) => Notice::Gap,
                    Err(e) => {
                        tracing::warn!(error = %e, "event listener lost its connection; reconnecting");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        Notice::Gap
                    }
                };
                if sender.send(notice).await.is_err() {
                    return; // the bus is gone: the server is stopping
                }
            }
        });
        Ok(Some(receiver))
    }
}
