//! Whether an instance may take a slot (statement builders here, their use in `queries/slots.rs`),
//! under `max_concurrent_instances` and the concurrency key's `max_per_key` together: the checks a
//! start or retry makes, the choice of which queued instances an admission takes, and the SQL the
//! queue inspector shares with them. Everything here runs under the workflow's lock (see
//! `admission.rs`), which is what makes both limits hold across processes.
//!
//! The order is FIFO per key and, among instances whose key has room, FIFO per workflow: an
//! instance held by its key does not hold back instances with other keys.

use super::statuses::ACTIVE;
use const_format::{concatcp, str_replace};

/// How many instances of workflow `$1` run with the concurrency key named by `{key}` (a column or
/// a parameter), as a subquery; `with_key` puts the key in.
const RUNNING_WITH_KEY: &str = concatcp!(
    "(SELECT COUNT(*) FROM instances a WHERE a.workflow_id = $1 AND a.concurrency_key = {key} AND a.status IN ",
    ACTIVE,
    ")"
);

/// `RUNNING_WITH_KEY` for the key of a queued instance `q`.
const RUNNING_WITH_QUEUED_KEY: &str = str_replace!(RUNNING_WITH_KEY, "{key}", "q.concurrency_key");
/// `RUNNING_WITH_KEY` for the key bound as `$2`.
pub(super) const RUNNING_WITH_BOUND_KEY: &str = str_replace!(RUNNING_WITH_KEY, "{key}", "$2");
/// `RUNNING_WITH_KEY` for the waiting key `k` of `OTHER_KEY_HAS_ROOM`.
const RUNNING_WITH_WAITING_KEY: &str = str_replace!(RUNNING_WITH_KEY, "{key}", "k.concurrency_key");

/// The queued instances of workflow `$1` that admission could take now, as `q` (`q.id`): those
/// without a key, and those whose place in their key's line is within the room the key has
/// under `max_per_key` (`$2`). The running count is read only for the first `$2` in each line.
pub(super) const ADMISSIBLE_QUEUED: &str = concatcp!(
    "SELECT q.id, q.queue_order FROM (SELECT id, queue_order, concurrency_key, ROW_NUMBER() OVER (PARTITION BY \
     concurrency_key ORDER BY queue_order, id) AS place \
     FROM instances WHERE workflow_id = $1 AND status = 'queued') q \
     WHERE q.concurrency_key IS NULL OR (q.place <= $2 AND q.place <= $2 - ",
    RUNNING_WITH_QUEUED_KEY,
    ")"
);

/// Whether a queued instance other than `$2` has no key, or a key other than `$3` with fewer
/// than `$4` running.
pub(super) const ADMISSIBLE_WAITING: &str = concatcp!(
    "SELECT EXISTS (SELECT 1 FROM instances WHERE workflow_id = $1 AND status = 'queued' AND concurrency_key \
     IS NULL AND id <> $2) \
     OR EXISTS (SELECT 1 FROM (SELECT DISTINCT concurrency_key FROM instances WHERE workflow_id = $1 AND \
     status = 'queued' \
     AND concurrency_key IS NOT NULL AND concurrency_key <> $3) k WHERE ",
    RUNNING_WITH_WAITING_KEY,
    " < $4)"
);

/// `ADMISSIBLE_QUEUED`, the oldest `$3` of them.
pub(super) const ADMISSIBLE_IDS: &str =
    concatcp!("SELECT a.id FROM (", ADMISSIBLE_QUEUED, ") a ORDER BY a.queue_order, a.id LIMIT $3");

// The statements `queries/slots.rs` runs, named for what they do.
pub(super) const KEY_FULL: &str = concatcp!(
    "SELECT EXISTS (SELECT 1 FROM instances WHERE workflow_id = $1 AND concurrency_key = $2 AND status = \
    'queued' AND id <> $4) OR (SELECT COUNT(*) FROM (SELECT 1 FROM instances WHERE workflow_id = $1 AND \
    concurrency_key = $2 AND status IN ",
    ACTIVE,
    " LIMIT $3) a) >= $3"
);
/// Whether `$3` instances of workflow `$1` with concurrency key `$2` run: the key is full
/// whoever waits (what `on_limit: reject` and `replace` ask).
pub(super) const KEY_AT_LIMIT: &str = concatcp!("SELECT ", RUNNING_WITH_BOUND_KEY, " >= $3");
pub(super) const WORKFLOW_HAS_ROOM: &str = concatcp!(
    "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM instances WHERE workflow_id = $1 AND status IN ",
    ACTIVE,
    " LIMIT $2) a) < $2"
);
/// The active instances of workflow `$1`, counted up to `$2`.
pub(super) const ACTIVE_UP_TO: &str = concatcp!(
    "SELECT COUNT(*) FROM (SELECT 1 FROM instances WHERE workflow_id = $1 AND status IN ",
    ACTIVE,
    " LIMIT $2) a"
);
pub(super) const OTHER_QUEUED: &str =
    "SELECT EXISTS (SELECT 1 FROM instances WHERE workflow_id = $1 AND status = 'queued' AND id <> $2)";
