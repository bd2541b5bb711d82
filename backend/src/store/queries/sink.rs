//! Where a batch's writes go: one round trip for all of them. On Postgres each write (instance
//! rows, work deletes, node rows, work, wakes, history) is one part of a single statement —
//! data-modifying `WITH` parts, the announcement of the history entries its main query. On
//! SQLite (`WITH` cannot hold an `INSERT`) the parts are statements of one text, separated by
//! `;`, which the driver runs one after the other, binding each its own values in order.
//!
//! The parts of one Postgres statement all see the database as it was before the statement:
//! fine for these writes, which never read what another part writes (work is deleted by
//! instance and attempt before the batch's new items exist, as in the order they were sent one
//! by one), and each row is written by one part at most (an instance whose update must be sent
//! in several statements, a retry's restart or a failure's triage, is written on its own).

use super::KeepBuilt;
use super::Store;
use crate::store::backend::Backend;
use crate::store::phases::PHASES;
use crate::store::{Result, StoreError};
use sqlx::QueryBuilder;

type Db = <Store as Backend>::Db;
type Conn = <Db as sqlx::Database>::Connection;

/// Binds one statement may carry before it is sent and another begun (Postgres allows 65,535).
const BINDS_PER_STATEMENT: usize = 30_000;

/// The error of a write whose guard found the database other than remembered (`close_returning`).
pub(super) fn stale() -> StoreError {
    StoreError::Conflict(STALE.into())
}

/// What `stale()` says.
pub(super) const STALE: &str = "remembered snapshot out of date";

pub(super) struct Sink<'args> {
    sql: QueryBuilder<'args, Db>,
    /// Parts in the statement being built.
    parts: usize,
    binds: usize,
    /// Never sent in pieces: the writes go as one statement (one text on SQLite) or not at all.
    whole: bool,
    /// Parts whose rows must number as many as given, or nothing of the writes is kept.
    guards: Vec<(usize, i64)>,
    /// The history entries' announcement (Postgres): a JSON array of payloads.
    announcement: Option<String>,
}

impl<'args> Sink<'args> {
    pub(super) fn new() -> Sink<'args> {
        Sink { sql: QueryBuilder::new(""), parts: 0, binds: 0, whole: false, guards: Vec::new(), announcement: None }
    }

    /// A sink whose writes are one statement on Postgres (one atomic write without a
    /// transaction around it): a part that would take it over the bind limit fails instead.
    pub(super) fn whole() -> Sink<'args> {
        Sink { whole: true, ..Sink::new() }
    }

    /// Begins a part: the caller pushes one whole write statement (with its binds) next.
    pub(super) fn open(&mut self) -> &mut QueryBuilder<'args, Db> {
        if Store::COMBINED_WRITES {
            self.sql.push(if self.parts == 0 { "WITH " } else { ", " });
            self.sql.push(format_args!("w{} AS (", self.parts));
        } else if self.parts > 0 {
            self.sql.push("; ");
        }
        &mut self.sql
    }

    /// Ends the part begun by `open`, which bound `binds` values; what is built is sent once it
    /// holds as many binds as a statement may.
    pub(super) async fn close(&mut self, conn: &mut Conn, binds: usize) -> Result<()> {
        self.end_part(binds)?;
        // Only a sink without guards gets here (`close_returning`): a `whole` one failed above.
        if self.binds >= BINDS_PER_STATEMENT {
            if Store::COMBINED_WRITES {
                self.sql.push(" SELECT 1");
            }
            self.send(conn).await?;
        }
        Ok(())
    }

    /// Ends a part that returns a row per row it wrote and must have written `rows`: if not,
    /// nothing of the writes is kept (on Postgres `finish` aborts the statement; on SQLite it
    /// answers `stale()` and the caller rolls back).
    /// Only a `whole` sink takes guards: sent in pieces, a piece would go without its check.
    pub(super) fn close_returning(&mut self, binds: usize, rows: usize) -> Result<()> {
        debug_assert!(self.whole, "a guarded part in a sink that may be sent in pieces");
        self.guards.push((self.parts, rows as i64));
        self.end_part(binds)
    }

    fn end_part(&mut self, binds: usize) -> Result<()> {
        self.end_part_unchecked();
        self.binds += binds;
        if self.whole && self.binds >= BINDS_PER_STATEMENT {
            return Err(StoreError::Conflict("too many writes for one statement".into()));
        }
        Ok(())
    }

    fn end_part_unchecked(&mut self) {
        if Store::COMBINED_WRITES {
            self.sql.push(")");
        }
        self.parts += 1;
    }

    /// Announces appended history entries (`payloads`: a JSON array, one per instance) with
    /// the last statement (Postgres), so the announcement costs no round trip of its own.
    pub(super) fn announce(&mut self, payloads: String) {
        self.announcement = Some(payloads);
    }

    /// Sends what is left, with the announcement as its main query (`NOTIFY_EVENTS` around
    /// the payloads), or the announcement alone if nothing is left. With guards, the main query
    /// is their check (`trellis_snapshot_held`, which aborts the whole statement if a guarded
    /// part wrote other than told) and the announcement a part it reads after it: evaluated
    /// once, whatever the announcement holds.
    pub(super) async fn finish(mut self, conn: &mut Conn) -> Result<()> {
        let announce = <Store as Backend>::NOTIFY_EVENTS.zip(self.announcement.take());
        if self.parts == 0 && announce.is_none() {
            return Ok(());
        }
        if !Store::COMBINED_WRITES || self.guards.is_empty() {
            match announce {
                Some(((head, tail), payloads)) => {
                    self.sql.push(if self.parts == 0 { "" } else { " " }).push(head).push_bind(payloads).push(tail);
                }
                None if Store::COMBINED_WRITES => {
                    self.sql.push(" SELECT 1");
                }
                None => {}
            }
            return self.send(conn).await;
        }
        let announced = announce.map(|((head, tail), payloads)| {
            self.open().push(head).push_bind(payloads).push(tail);
            self.end_part_unchecked();
            self.parts - 1
        });
        self.push_guards();
        if let Some(part) = announced {
            self.sql.push(format_args!(" AND (SELECT COUNT(*) FROM w{part}) >= 0"));
        }
        self.send(conn).await
    }

    /// ` SELECT trellis_snapshot_held(...)` over the guarded parts' row counts.
    fn push_guards(&mut self) {
        self.sql.push(" SELECT trellis_snapshot_held(");
        for (k, (part, rows)) in std::mem::take(&mut self.guards).into_iter().enumerate() {
            self.sql.push(if k == 0 { "" } else { " AND " });
            self.sql.push(format_args!("(SELECT COUNT(*) FROM w{part}) = ")).push_bind(rows);
        }
        self.sql.push(")");
    }

    /// Sends what is built. On SQLite the guarded parts' rows (the only parts that return
    /// any) must add up to what they were told: each returns at most its own count, so the
    /// sum holds only if every one does.
    async fn send(&mut self, conn: &mut Conn) -> Result<()> {
        if self.parts == 0 && self.sql.sql().is_empty() {
            return Ok(());
        }
        let guarded = !Store::COMBINED_WRITES && !self.guards.is_empty();
        let returned = self.sql.build().keep_built().fetch_all(&mut *conn).await?.len() as i64;
        PHASES.statement();
        let expected: i64 = std::mem::take(&mut self.guards).iter().map(|(_, rows)| rows).sum();
        self.sql.reset();
        self.parts = 0;
        self.binds = 0;
        if guarded && returned != expected {
            return Err(stale());
        }
        Ok(())
    }
}
