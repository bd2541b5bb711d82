//! Group commit, the SQL half (`shared/transitions.rs`; the batch size here): the transitions of
//! many instances in one transaction, with one durable commit for all of them. The batch locks its
//! instances in id order (so two batches never wait for each other in a cycle), consumes the fenced
//! work items in one statement (a stale fence leaves its own step out, nothing else), decides each
//! step on its instance as the batch's earlier steps left it, and writes each kind of row once for
//! the whole batch (`batch.rs` gathers them). The whole batch commits or none of it does: a crash
//! mid-batch leaves every work item in place, to be claimed and run again.

/// Rows per multi-row statement: at most 14 binds each keeps it under SQLite's 32,766.
pub(super) const ROWS_PER_INSERT: usize = 500;
