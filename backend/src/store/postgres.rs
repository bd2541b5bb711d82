//! Postgres: the production backend, shared by any number of `trellis serve` processes.

use super::backend::Backend;
use super::notice::{self, Appended, Notice};
use super::pg_pool::PgDb;
use super::snapshots::Snapshots;
use super::Result;
use crate::config::DatabaseConfig;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::mpsc::{Receiver, Sender};
use uuid::Uuid;

pub struct PgStore {
    pool: PgDb,
    /// One connection straight to Postgres (`TRELLIS_DIRECT_DATABASE_URL`), for LISTEN; else
    /// LISTEN goes through `pool` — unless that is a transaction-mode pooler, where it cannot.
    direct: Option<PgPool>,
    /// Names this store (this process) in its announcements, so its listener skips them.
    origin: Uuid,
    snapshots: Snapshots,
    /// Connections for writes from remembered snapshots (none behind a pooler): each write is
    /// one statement looked up by keys, so they plan it once (`plan_cache_mode`) instead of at
    /// every write — which took longer than running it.
    remembered: Option<PgPool>,
}

impl PgStore {
    pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<Self> {
        let url = config.database_url.as_str();
        let pooler = config.behind_transaction_pooler();
        let mut options = PgConnectOptions::from_str(url)?.application_name("trellis");
        if pooler {
            // Nothing cached across transactions (see `pg_pool.rs` for what else it takes), and
            // no `extra_float_digits` startup parameter, which PgBouncer refuses unless told to
            // ignore it (Postgres 12 and later print floats exactly without it).
            options = options.statement_cache_capacity(0).extra_float_digits(None);
        } else {
            options = options.statement_cache_capacity(STATEMENT_CACHE);
        }
        let remembered = (!pooler).then(|| {
            PgPoolOptions::new()
                .max_connections(REMEMBERED_CONNECTIONS)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_millis(config.db_acquire_timeout_ms.max(100)))
                .connect_lazy_with(options.clone().options([("plan_cache_mode", "force_generic_plan")]))
        });
        // No ping before each use: a round trip on every transaction's path, while sqlx pings
        // each connection as it is given back anyway, and a connection lost in between fails its
        // statement as any other database trouble does (retried, or a 503).
        let pool = PgPoolOptions::new()
            .max_connections(config.db_max_connections)
            .test_before_acquire(false)
            // A request waits this long for a connection (the database away, the pool or the
            // pooler's pool exhausted), then is answered 503 with `Retry-After`; busy pools
            // hand connections over in ms.
            .acquire_timeout(Duration::from_millis(config.db_acquire_timeout_ms.max(100)))
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", super::redact_url(url)))?;
        let direct = match config.direct_database_url.as_deref().filter(|u| !u.trim().is_empty()) {
            Some(direct) => Some(connect_direct(direct).await?),
            None => None,
        };
        let pool = PgDb::new(pool, pooler);
        super::pg_setup::migrate(&pool, direct.as_ref()).await?;
        if pooler && direct.is_none() {
            tracing::warn!(
                "TRELLIS_DATABASE_POOLER=transaction without TRELLIS_DIRECT_DATABASE_URL: LISTEN cannot work through \
                 a transaction-mode pooler, so this process hears of other processes' work only by polling — event \
                 streams reread the history every TRELLIS_SSE_RESYNC_MS, and the dashboard feed shows this \
                 process's changes only. Set TRELLIS_DIRECT_DATABASE_URL (straight to Postgres) for live updates."
            );
        }
        Ok(PgStore { pool, direct, origin: Uuid::now_v7(), snapshots: Snapshots::default(), remembered })
    }
}

/// Statements each connection keeps prepared (sqlx's default is 100). A batch's writes are one
/// statement whose text follows its shape (`queries/sink.rs`), tens of KiB each; kept 100 deep
/// on each of up to 32 connections they held ~50 MiB of a soak's heap (heaptrack). The hot
/// statements are a few dozen; what falls out is prepared again (one more round trip).
const STATEMENT_CACHE: usize = 24;

/// Connections for writes from remembered snapshots, opened as needed: each commit lane (two
/// by default, at most 16) writes one batch at a time, so this many are never waited for long.
const REMEMBERED_CONNECTIONS: u32 = 16;

/// The direct connection: one, for LISTEN (and, before that, migrations).
async fn connect_direct(url: &str) -> anyhow::Result<PgPool> {
    let options = PgConnectOptions::from_str(url)?.application_name("trellis-listen");
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(options)
        .await
        .map_err(|e| anyhow::anyhow!("cannot connect to TRELLIS_DIRECT_DATABASE_URL {}: {e}", super::redact_url(url)))
}

/// The store type the queries (`queries/`) are implemented for in this backend.
type Store = PgStore;

// Loaded by both backends on purpose: one SQL body, type-checked against each driver.
#[allow(clippy::duplicate_mod)]
#[path = "queries/mod.rs"]
mod queries;

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
    const UUID_TEXT: &'static str = "CAST({} AS TEXT)";
    const FLOOR: &'static str = "FLOOR";
    const INSTANCES_BY_END: &'static str = "instances";
    const NOTIFY_EVENTS: Option<(&'static str, &'static str)> =
        Some(("SELECT pg_notify('trellis_events', p) FROM json_array_elements_text(", "::json) AS p"));
    const COMBINED_WRITES: bool = true;
    const KEEP_BUILT_STATEMENTS: bool = true;

    type Pool = PgDb;

    fn pool(&self) -> &PgDb {
        &self.pool
    }

    fn origin(&self) -> Uuid {
        self.origin
    }

    async fn autocommit_connection(&self) -> Result<Option<sqlx::pool::PoolConnection<sqlx::Postgres>>> {
        match &self.remembered {
            Some(pool) => Ok(Some(pool.acquire().await?)),
            None => Ok(None),
        }
    }

    fn snapshots(&self) -> &Snapshots {
        &self.snapshots
    }

    async fn write_guard(&self) {}

    /// LISTENs on its own connection (the direct one, if set) and forwards other processes'
    /// announcements. When the connection drops, sqlx reconnects; what was announced
    /// meanwhile is lost, which the receiver is told (`Notice::Gap`) so it rereads the
    /// history. Behind a transaction-mode pooler without a direct connection: `None` (said
    /// at start; streams poll).
    async fn listen_for_notices(&self) -> Result<Option<Receiver<Notice>>> {
        let pool = match (&self.direct, self.pool.behind_pooler()) {
            (Some(direct), _) => direct.clone(),
            (None, false) => self.pool.inner().clone(),
            (None, true) => return Ok(None),
        };
        let listener = listen_on(&pool).await?;
        let (sender, receiver) = tokio::sync::mpsc::channel(4_096);
        tokio::spawn(relay_notices(pool, listener, self.origin, sender));
        Ok(Some(receiver))
    }
}

async fn listen_on(pool: &PgPool) -> Result<PgListener> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(notice::CHANNEL).await?;
    Ok(listener)
}

/// Forwards other processes' announcements until the receiver is gone. sqlx reconnects a
/// listener whose connection ended; one that fails otherwise (a reset, say) is replaced.
async fn relay_notices(pool: PgPool, listener: PgListener, origin: Uuid, sender: Sender<Notice>) {
    let mut listener = Some(listener);
    loop {
        let Some(current) = listener.as_mut() else {
            match listen_on(&pool).await {
                Ok(fresh) => listener = Some(fresh),
                Err(e) => {
                    tracing::warn!(error = %e, "event listener cannot reconnect; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            continue;
        };
        let notice = match current.try_recv().await {
            Ok(Some(n)) if notice::sent_by(n.payload(), origin) => continue,
            Ok(Some(n)) => match serde_json::from_str::<Appended>(n.payload()) {
                Ok(appended) => Notice::Appended(appended),
                Err(e) => {
                    tracing::warn!(error = %e, "ignoring a malformed event announcement");
                    continue;
                }
            },
            Ok(None) => Notice::Gap,
            Err(e) => {
                tracing::warn!(error = %e, "event listener lost its connection; reconnecting");
                listener = None;
                tokio::time::sleep(Duration::from_secs(1)).await;
                Notice::Gap
            }
        };
        if sender.send(notice).await.is_err() {
            return; // the bus is gone: the server is stopping
        }
    }
}
