//! The contract between the SQL both backends share and each backend: what differs between
//! Postgres and SQLite, in one trait. A backend file provides `Backend` for its store type,
//! names that type `Store` and includes `queries/` as a module of its own; the queries take
//! the dialect from this trait and nothing else from the backend file. No macros: the SQL is
//! plain Rust that rustfmt, clippy and error messages reach.

use super::notice::Notice;
use super::snapshots::Snapshots;
use super::Result;
use std::future::Future;
use tokio::sync::mpsc::Receiver;
use uuid::Uuid;

pub(super) trait Backend: Send + Sync + 'static {
    /// The sqlx driver: `Postgres` or `Sqlite`.
    type Db: sqlx::Database;
    /// Held by a writer for its whole transaction.
    type WriteGuard<'a>: Send
    where
        Self: 'a;

    /// The backend's name, for logs and `/readyz`.
    const NAME: &'static str;
    /// Appended to a `SELECT` of the one row whose lock a transaction takes (an instance, a
    /// workflow): the per-row locks that make transitions and admission safe across processes.
    const LOCK_ROW: &'static str;
    /// Appended to the `SELECT` of a claim: rows another process is claiming are skipped.
    const SKIP_LOCKED: &'static str;
    /// The greatest `id` of a group of instances (the newest: ids are UUIDv7). Postgres has no
    /// `max` over `uuid`; SQLite stores ids as 16-byte blobs, which compare in uuid order.
    const NEWEST_ID: &'static str;
    /// Seconds since the Unix epoch of the timestamp column named by `{}` (a number).
    const EPOCH_OF: &'static str;
    /// The text of the uuid column named by `{}`, as Rust writes a `Uuid` (lowercase,
    /// hyphenated): for comparing with keys built in Rust. SQLite stores uuids as blobs.
    const UUID_TEXT: &'static str;
    /// Rounds a non-negative number down before a `CAST(... AS BIGINT)`: Postgres's cast
    /// rounds to nearest, SQLite's truncates (which is the same for a non-negative number).
    const FLOOR: &'static str;
    /// `instances` as a statement reading the latest ends names it (`WHERE status IN ... AND
    /// ended_at > $t`): through `instances_by_end`, whose range after a recent time is small.
    /// SQLite, without statistics, would read a workflow's every ended instance instead.
    const INSTANCES_BY_END: &'static str;
    /// How appended history entries are announced to other processes, if they are: a query
    /// that follows the entries' insert in the same statement (its `WITH`), in two parts
    /// around the bound payloads (a JSON array of strings, one per instance).
    const NOTIFY_EVENTS: Option<(&'static str, &'static str)>;
    /// Whether a batch's writes go as one statement of data-modifying `WITH` parts (Postgres),
    /// or as statements of one text (SQLite, whose `WITH` cannot hold an `INSERT`); see
    /// `queries/sink.rs`.
    const COMBINED_WRITES: bool;
    /// Whether a statement built for its number of rows (`QueryBuilder`: batches, id lists)
    /// stays prepared on the connection for the next use of the same text. Not on SQLite: each
    /// row count is a program of its own that every pooled connection would keep (a soak held
    /// ~90 MiB of them across 16 connections), and preparing one again costs less than a
    /// write's fsync. On Postgres they are kept: the server holds them, not this process, and
    /// planning them again would cost each batch a parse on the server.
    const KEEP_BUILT_STATEMENTS: bool;

    /// What the queries run statements on and begins transactions with: the sqlx pool
    /// (SQLite), or a wrapper safe behind a transaction-mode pooler (Postgres, `pg_pool.rs`).
    type Pool;

    fn pool(&self) -> &Self::Pool;
    /// A connection whose statements each commit on their own (Postgres, not behind a
    /// transaction-mode pooler, where a statement outside a transaction could meet another
    /// connection's prepared statements); `None` where a transaction must be begun instead.
    fn autocommit_connection(
        &self,
    ) -> impl Future<Output = Result<Option<sqlx::pool::PoolConnection<Self::Db>>>> + Send;
    /// The instances this process last wrote (`snapshots.rs`).
    fn snapshots(&self) -> &Snapshots;
    /// Names this store (this process) in its announcements, so its listener skips them.
    fn origin(&self) -> Uuid;
    /// Serializes this process's writers where the database cannot (SQLite); a no-op where
    /// it can.
    fn write_guard(&self) -> impl Future<Output = Self::WriteGuard<'_>> + Send;
    /// Announcements of history entries other processes append; `None` where there are no
    /// other processes.
    fn listen_for_notices(&self) -> impl Future<Output = Result<Option<Receiver<Notice>>>> + Send;
}
