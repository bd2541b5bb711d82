//! Where a batch's writes go. On Postgres each write (instance rows, work deletes, node rows,
//! work, wakes, history) is one part of a single statement — data-modifying `WITH` parts,
//! the announcement of the history entries its main query — so a transition's writes cost
//! one round trip, not six. On SQLite (in process: a statement costs no round trip, and
//! `WITH` cannot hold an `INSERT`) each part is sent as its own statement as it closes.
//!
//! The parts of one statement all see the database as it was before the statement: fine for
//! these writes, which never read what another part writes (work is deleted by instance and
//! attempt before the batch's new items exist, as in the order they were sent one by one),
//! and each row is written by one part at most (an instance whose update must be sent in
//! several statements, a retry's restart or a failure's triage, is written on its own).

use super::Store;
use crate::store::backend::Backend;
use crate::store::phases::PHASES;
use crate::store::Result;
use sqlx::QueryBuilder;

type Db = <Store as Backend>::Db;
type Tx<'t> = sqlx::Transaction<'t, Db>;

/// Binds one statement may carry before it is sent and another begun (Postgres allows 65,535).
const BINDS_PER_STATEMENT: usize = 30_000;

pub(super) struct Sink<'args> {
    sql: QueryBuilder<'args, Db>,
    /// Parts in the statement being built.
    parts: usize,
    binds: usize,
    /// The history entries' announcement (Postgres): a JSON array of payloads.
    announcement: Option<String>,
}

impl<'args> Sink<'args> {
    pub(super) fn new() -> Sink<'args> {
        Sink { sql: QueryBuilder::new(""), parts: 0, binds: 0, announcement: None }
    }

    /// Begins a part: the caller pushes one whole write statement (with its binds) next.
    pub(super) fn open(&mut self) -> &mut QueryBuilder<'args, Db> {
        if Store::COMBINED_WRITES {
            self.sql.push(if self.parts == 0 { "WITH " } else { ", " });
            self.sql.push(format_args!("w{} AS (", self.parts));
        }
        &mut self.sql
    }

    /// Ends the part begun by `open`, which bound `binds` values: sent now on SQLite, and on
    /// Postgres once the statement holds as many binds as it may.
    pub(super) async fn close(&mut self, tx: &mut Tx<'_>, binds: usize) -> Result<()> {
        if !Store::COMBINED_WRITES {
            return self.send(tx).await;
        }
        self.sql.push(")");
        self.parts += 1;
        self.binds += binds;
        if self.binds >= BINDS_PER_STATEMENT {
            self.sql.push(" SELECT 1");
            self.send(tx).await?;
        }
        Ok(())
    }

    /// Announces appended history entries (`payloads`: a JSON array, one per instance) with
    /// the last statement (Postgres), so the announcement costs no round trip of its own.
    pub(super) fn announce(&mut self, payloads: String) {
        self.announcement = Some(payloads);
    }

    /// Sends what is left, with the announcement as its main query (`NOTIFY_EVENTS` around
    /// the payloads), or the announcement alone if nothing is left.
    pub(super) async fn finish(mut self, tx: &mut Tx<'_>) -> Result<()> {
        let announce = <Store as Backend>::NOTIFY_EVENTS.zip(self.announcement.take());
        if self.parts == 0 && announce.is_none() {
            return Ok(());
        }
        match announce {
            Some(((head, tail), payloads)) => {
                self.sql.push(if self.parts == 0 { "" } else { " " }).push(head).push_bind(payloads).push(tail);
            }
            None => {
                self.sql.push(" SELECT 1");
            }
        }
        self.send(tx).await
    }

    async fn send(&mut self, tx: &mut Tx<'_>) -> Result<()> {
        self.sql.build().execute(&mut **tx).await?;
        PHASES.statement();
        self.sql.reset();
        self.parts = 0;
        self.binds = 0;
        Ok(())
    }
}
