//! The store's SQL, one body for both databases: each backend file includes this folder as a
//! module of its own (`#[path = "queries/mod.rs"] mod queries;`) with `Store` naming its store
//! type, so every statement here is type-checked against that backend's sqlx driver and takes
//! the dialect from its `Backend` impl (`backend.rs`). Postgres and SQLite accept the same
//! statements (`$n` placeholders, `RETURNING`, `ON CONFLICT`) and sqlx maps the same Rust types
//! onto each dialect's columns. Writers hold the store's `write_guard` (a no-op on Postgres; on
//! SQLite it serializes this process's writers, see `sqlite.rs`). The traits these implement,
//! and the SQL text they share with other statements, live beside them under the same name: `store/<topic>.rs` for `queries/<topic>.rs`.
//! `Store`'s own methods (the backend's name, a ping, settings) are implemented here, their SQL
//! in `store/mod.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::{Result, INSERT_SETTING_IF_ABSENT, PING, SETTING};

mod accounts;
mod admission;
mod admission_clock;
mod alerts;
mod approvals;
mod audit;
mod brokers;
mod catalog;
mod cluster;
mod debounces;
mod insights;
mod instances;
mod jobs;
mod limit_batch;
mod limits;
mod map_items;
mod remembered;
mod retention;
mod secrets;
mod sink;
mod slots;
mod slow;
mod sso;
mod start_batch;
mod start_claims;
mod start_windows;
mod transitions;
mod triggers;
mod views;
mod windows;
mod work;

type Db = <Store as crate::store::backend::Backend>::Db;

/// What belongs to no topic: the backend's name, a ping, settings.
#[async_trait::async_trait]
impl crate::store::Store for Store {
    fn backend(&self) -> &'static str {
        Self::NAME
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query(PING).execute(self.pool()).await?;
        Ok(())
    }

    async fn setting_or_init(&self, key: &str, value: &str) -> Result<String> {
        let _guard = self.write_guard().await;
        sqlx::query(INSERT_SETTING_IF_ABSENT).bind(key).bind(value).execute(self.pool()).await?;
        let (stored,): (String,) = sqlx::query_as(SETTING).bind(key).fetch_one(self.pool()).await?;
        Ok(stored)
    }
}

/// Binds each of `values`, comma-separated, where a statement lists them (`… IN (` before,
/// the caller's `)` after). The list must not be empty: `IN ()` is not SQL.
fn push_binds<'a, T>(sql: &mut sqlx::QueryBuilder<'a, Db>, values: impl IntoIterator<Item = T>)
where
    T: 'a + sqlx::Encode<'a, Db> + sqlx::Type<Db> + Send,
{
    let mut list = sql.separated(", ");
    for value in values {
        list.push_bind(value);
    }
}

/// A statement built by `QueryBuilder`, kept prepared on its connection where the backend keeps
/// such statements (`Backend::KEEP_BUILT_STATEMENTS`: Postgres yes, SQLite no). Every built
/// statement runs through `.keep_built()`, so the choice is made once, here.
trait KeepBuilt {
    fn keep_built(self) -> Self;
}

impl<A> KeepBuilt for sqlx::query::Query<'_, Db, A> {
    fn keep_built(self) -> Self {
        self.persistent(<Store as crate::store::backend::Backend>::KEEP_BUILT_STATEMENTS)
    }
}

impl<O, A> KeepBuilt for sqlx::query::QueryAs<'_, Db, O, A> {
    fn keep_built(self) -> Self {
        self.persistent(<Store as crate::store::backend::Backend>::KEEP_BUILT_STATEMENTS)
    }
}
