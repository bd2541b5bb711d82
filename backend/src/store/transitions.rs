//! Group commit, the SQL half (`queries/transitions.rs`; the batch size here): the transitions of
//! many instances in one transaction, with one durable commit for all of them. The batch locks its
//! instances in id order (so two batches never wait for each other in a cycle), consumes the fenced
//! work items in one statement (a stale fence leaves its own step out, nothing else), decides each
//! step on its instance as the batch's earlier steps left it, and writes each kind of row once for
//! the whole batch (`batch.rs` gathers them). The whole batch commits or none of it does: a crash
//! mid-batch leaves every work item in place, to be claimed and run again.

use super::instances::{INSTANCE_READ_COLUMNS, NODE_COLUMNS};
use const_format::{concatcp, str_replace};

/// Rows per multi-row statement: at most 14 binds each keeps it under SQLite's 32,766.
pub(super) const ROWS_PER_INSERT: usize = 500;

/// `NODE_COLUMNS` of the node rows `n`.
const NODES_N_COLUMNS: &str = concatcp!("n.", str_replace!(NODE_COLUMNS, ", ", ", n."));
/// The head of the locking read of a batch's instances, before their ids.
pub(super) const INSTANCES_OF: &str = concatcp!("SELECT ", INSTANCE_READ_COLUMNS, " FROM instances WHERE id IN (");
/// Between the ids of `SNAPSHOT_NODES_OF` (the last `seq` of each) and the ids whose nodes it reads.
pub(super) const SNAPSHOT_NODES_JOIN: &str = concatcp!(
    ")) SELECT n.instance_id, ",
    NODES_N_COLUMNS,
    ", h.last_seq FROM instance_nodes n JOIN h ON h.id = n.instance_id WHERE n.instance_id IN ("
);
/// After the rows of an `INSERT_NODES`: a node row that exists takes the new values.
pub(super) const UPSERT_NODES_TAIL: &str =
    " ON CONFLICT (instance_id, node_id) DO UPDATE SET status = excluded.status, attempts = \
     excluded.attempts, \
     outcome = excluded.outcome, output = excluded.output, error = excluded.error, started_at = \
     excluded.started_at, \
     ended_at = excluded.ended_at, dispatched_at = excluded.dispatched_at, wait_kind = excluded.wait_kind, \
     wait_started_at = excluded.wait_started_at";
/// The head of a multi-row insert of history entries.
pub(super) const INSERT_EVENTS: &str = "INSERT INTO instance_events (instance_id, seq, kind, at, data) ";

// The statements `queries/transitions.rs` runs, named for what they do.
pub(super) const SNAPSHOT_NODES_OF: &str =
    "WITH h AS MATERIALIZED (SELECT i.id, (SELECT MAX(e.seq) FROM instance_events e WHERE e.instance_id \
    = i.id) AS last_seq FROM instances i WHERE i.id IN (";
pub(super) const DELETE_FENCED_WORK: &str = "DELETE FROM work WHERE ";
pub(super) const RESTART_INSTANCE: &str =
    "UPDATE instances SET run = run + 1, output = NULL, error = NULL, failed_node = NULL, error_class = \
    NULL, started_at = NULL, ended_at = NULL WHERE id = $1";
pub(super) const SET_FAILED_NODE: &str = "UPDATE instances SET failed_node = $1, error_class = $2 WHERE id = $3";
/// A `started_at` given replaces the stored one: a retry that waited in the queue recorded its
/// retry's time, and its admission records when it took its slot (`queries/admission_clock.rs`).
pub(super) const UPDATE_INSTANCE: &str =
    "UPDATE instances SET status = $1, output = COALESCE($2, output), error = COALESCE($3, error), \
    started_at = COALESCE($4, started_at), ended_at = COALESCE($5, ended_at), rev = rev + $7 WHERE id = $6";
/// Sets instances' rows to the values after it, each only while its `rev` is the one it was
/// read (or remembered) with: (id, status, output, error, started, ended, new rev, old rev).
pub(super) const UPDATE_INSTANCE_ROWS: &str =
    "UPDATE instances SET status = v.column2, output = v.column3, error = v.column4, started_at = \
    v.column5, ended_at = v.column6, rev = v.column7 FROM (";
pub(super) const UPDATE_INSTANCE_ROWS_TAIL: &str =
    ") AS v WHERE instances.id = v.column1 AND instances.rev = v.column8 RETURNING instances.id";
/// One more `rev` for an instance written outside a batch (a retry's or a start's writes).
pub(super) const BUMP_REV: &str = "UPDATE instances SET rev = rev + 1 WHERE id = $1";
pub(super) const DELETE_WORK_OF_INSTANCES: &str = "DELETE FROM work WHERE instance_id IN (";
pub(super) const DELETE_ENDED_WORK: &str = "DELETE FROM work WHERE kind <> 'retry' AND (";
pub(super) const INSERT_WORK: &str =
    "INSERT INTO work (id, instance_id, kind, node_id, attempt, queue, payload, due_at, lease_owner, \
    lease_epoch, lease_expires_at, workflow_id) ";
/// A wake of a parent, inserted only while the parent exists: its id, then (`id, `) its kind,
/// node, attempt, (`NULL, `) payload and due instant are bound between the two parts, and
/// the parent's id after the tail.
pub(super) const INSERT_WAKE_HEAD: &str =
    "INSERT INTO work (id, instance_id, kind, node_id, attempt, queue, payload, due_at, lease_owner, \
    lease_epoch, lease_expires_at, workflow_id) SELECT ";
pub(super) const INSERT_WAKE_TAIL: &str = ", NULL, 0, NULL, workflow_id FROM instances WHERE id = ";
pub(super) const LAST_SEQS: &str =
    "SELECT i.id, (SELECT MAX(e.seq) FROM instance_events e WHERE e.instance_id = i.id) FROM instances i \
    WHERE i.id IN (";
