//! The Postgres pool as the queries use it (`Backend::pool`): `.begin()` and single
//! statements, timed for `/metrics`, and safe behind a transaction-mode pooler.
//!
//! Behind PgBouncer in transaction mode, each transaction may run on a different server
//! connection, and a statement outside a transaction may too — even between its own two
//! round trips: sqlx 0.8 sends Parse + Describe + Sync, waits for the answer, then Bind +
//! Execute + Sync, and the pooler hands the server connection to another client at the first
//! Sync. Named statements (`sqlx_s_N`, numbered per client connection) are left on a server
//! connection another client then reuses: "prepared statement already exists", and with a
//! statement cache, "does not exist". (`statement_cache_capacity(0)` alone does not help:
//! sqlx 0.8.6 still names every statement, and never closes it.) So in pooler mode:
//! - a statement outside a transaction runs in a transaction of its own, as the unnamed
//!   statement (`persistent(false)`), so both round trips reach the same server connection;
//! - a transaction begins with `DEALLOCATE ALL`, clearing whatever named statements earlier
//!   clients left on the server connection it got, so its own names cannot collide.

use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use sqlx::postgres::{PgPool, PgQueryResult, PgRow, PgStatement, PgTypeInfo};
use sqlx::{Describe, Either, Execute, Executor, Postgres, Transaction};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How this process waited for database connections (Postgres), for `/metrics`.
#[derive(Default)]
pub struct PoolWaits {
    acquired: AtomicU64,
    waited_micros: AtomicU64,
    timed_out: AtomicU64,
}

/// This process's waits (one pool per process).
pub static POOL_WAITS: PoolWaits =
    PoolWaits { acquired: AtomicU64::new(0), waited_micros: AtomicU64::new(0), timed_out: AtomicU64::new(0) };

impl PoolWaits {
    fn record(&self, waited: Duration, outcome: &Result<impl Sized, sqlx::Error>) {
        self.waited_micros.fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
        match outcome {
            Ok(_) => self.acquired.fetch_add(1, Ordering::Relaxed),
            Err(sqlx::Error::PoolTimedOut) => self.timed_out.fetch_add(1, Ordering::Relaxed),
            Err(_) => 0,
        };
    }

    /// (connections handed out, seconds spent waiting for them, waits that timed out).
    pub fn totals(&self) -> (u64, f64, u64) {
        let micros = self.waited_micros.load(Ordering::Relaxed);
        (self.acquired.load(Ordering::Relaxed), micros as f64 / 1e6, self.timed_out.load(Ordering::Relaxed))
    }
}

/// A Postgres pool, direct or through a transaction-mode pooler (see the module docs).
#[derive(Debug, Clone)]
pub struct PgDb {
    pool: PgPool,
    /// `DATABASE_URL` goes through a pooler in transaction mode.
    pooler: bool,
}

impl PgDb {
    pub fn new(pool: PgPool, pooler: bool) -> PgDb {
        PgDb { pool, pooler }
    }

    /// A transaction on a connection of its own.
    pub async fn begin(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        let started = Instant::now();
        let outcome =
            if self.pooler { self.pool.begin_with("BEGIN; DEALLOCATE ALL").await } else { self.pool.begin().await };
        POOL_WAITS.record(started.elapsed(), &outcome);
        outcome
    }

    /// A connection of the pool, its wait recorded as `begin`'s is.
    async fn acquire(&self) -> Result<sqlx::pool::PoolConnection<Postgres>, sqlx::Error> {
        let started = Instant::now();
        let outcome = self.pool.acquire().await;
        POOL_WAITS.record(started.elapsed(), &outcome);
        outcome
    }

    /// Whether `DATABASE_URL` goes through a transaction-mode pooler.
    pub fn behind_pooler(&self) -> bool {
        self.pooler
    }

    /// The sqlx pool itself, for what needs a session of its own (LISTEN, the migrator's
    /// lock): only when there is no pooler.
    pub fn inner(&self) -> &PgPool {
        &self.pool
    }

    pub fn size(&self) -> u32 {
        self.pool.size()
    }

    pub fn num_idle(&self) -> usize {
        self.pool.num_idle()
    }

    pub fn options(&self) -> &sqlx::pool::PoolOptions<Postgres> {
        self.pool.options()
    }

    /// Runs one statement and collects what it returns: in a transaction of its own and
    /// unnamed behind a pooler, else as the pool would.
    async fn run<'q, E>(&self, query: E) -> Result<Vec<Either<PgQueryResult, PgRow>>, sqlx::Error>
    where
        E: 'q + Execute<'q, Postgres>,
    {
        let mut conn = self.acquire().await?;
        if !self.pooler {
            return (&mut *conn).fetch_many(query).try_collect().await;
        }
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        let results = (&mut *tx).fetch_many(Unnamed(query)).try_collect().await?;
        tx.commit().await?;
        Ok(results)
    }
}

/// A statement sent as the unnamed prepared statement: nothing is left on the server.
struct Unnamed<E>(E);

impl<'q, E: Execute<'q, Postgres>> Execute<'q, Postgres> for Unnamed<E> {
    fn sql(&self) -> &'q str {
        self.0.sql()
    }

    fn statement(&self) -> Option<&PgStatement<'q>> {
        self.0.statement()
    }

    fn take_arguments(&mut self) -> Result<Option<sqlx::postgres::PgArguments>, sqlx::error::BoxDynError> {
        self.0.take_arguments()
    }

    fn persistent(&self) -> bool {
        false
    }
}

/// Every statement the queries run outside a transaction comes through here.
impl<'p> Executor<'p> for &'_ PgDb {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        let db = self.clone();
        stream::once(async move { db.run(query).await })
            .map_ok(|results| stream::iter(results.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        let db = self.clone();
        Box::pin(async move {
            let results = db.run(query).await?;
            Ok(results.into_iter().find_map(|r| match r {
                Either::Right(row) => Some(row),
                Either::Left(_) => None,
            }))
        })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement<'q>, sqlx::Error>>
    where
        'p: 'e,
    {
        (&self.pool).prepare_with(sql, parameters)
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, Result<Describe<Postgres>, sqlx::Error>>
    where
        'p: 'e,
    {
        (&self.pool).describe(sql)
    }
}
