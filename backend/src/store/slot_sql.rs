//! Whether an instance may take a slot (statement builders here, their use in `shared/slots.rs`),
//! under `max_concurrent_instances` and the concurrency key's `max_per_key` together: the checks a
//! start or retry makes, the choice of which queued instances an admission takes, and the SQL the
//! queue inspector shares with them. Everything here runs under the workflow's lock (see
//! `admission_sql.rs`), which is what makes both limits hold across processes.
//!
//! The order is FIFO per key and, among instances whose key has room, FIFO per workflow: an
//! instance held by its key does not hold back instances with other keys.

/// The queued instances of workflow `$1` that admission could take now, as `q` (`q.id`): those
/// without a key, and those whose place in their key's line is within the room the key has
/// under `max_per_key` (`$2`). The running count is read only for the first `$2` in each line.
pub(super) fn admissible_queued() -> String {
    format!(
        "SELECT q.id FROM (SELECT id, concurrency_key, ROW_NUMBER() OVER (PARTITION BY concurrency_key ORDER BY id) \
         AS place \
         FROM instances WHERE workflow_id = $1 AND status = 'queued') q \
         WHERE q.concurrency_key IS NULL OR (q.place <= $2 AND q.place <= $2 - {})",
        running_with_key("q.concurrency_key")
    )
}

/// How many instances of workflow `$1` run with the concurrency key `key` (a column or a
/// parameter), as a subquery.
pub(super) fn running_with_key(key: &str) -> String {
    format!(
        "(SELECT COUNT(*) FROM instances a WHERE a.workflow_id = $1 AND a.concurrency_key = {key} AND a.status IN {})",
        super::statuses::ACTIVE
    )
}
