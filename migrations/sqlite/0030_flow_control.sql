-- Flow control over time (workflow settings `throttle` and `rate_limit`): one row per start a
-- window let through, kept for the window's length. `scope` names the window's owner
-- (`throttle:<workflow id>`, `rate:<workflow id>`), `key` the key's value as JSON text ('' with
-- no key). Counting a key's rows newer than `now - period` under the workflow's lock is what
-- keeps every span of `period_ms` within `limit` across processes and restarts.
CREATE TABLE rate_marks (
    scope TEXT NOT NULL,
    key   TEXT NOT NULL,
    at    TEXT NOT NULL
);
CREATE INDEX rate_marks_window ON rate_marks (scope, key, at);

-- The value of the throttle's `key` expression for an instance (JSON text), fixed at its start:
-- which throttle window admits it.
ALTER TABLE instances ADD COLUMN throttle_key TEXT;

-- `settings.priority`: the level an instance started with (1-5, 5 highest; null when the
-- workflow sets none), and the order admission takes queued instances in: its start time in
-- milliseconds less one aging step per level above 1, so a higher level goes first and a
-- waiting instance is passed over only by starts younger than its head start (never forever).
-- Rows made before (or by a release without it) are 0: the oldest in line.
ALTER TABLE instances ADD COLUMN priority INTEGER;
ALTER TABLE instances ADD COLUMN queue_order BIGINT NOT NULL DEFAULT 0;
CREATE INDEX instances_queue_order ON instances (workflow_id, queue_order, id) WHERE status = 'queued';

-- `settings.debounce`: a burst of starts of one key that is still gathering. The instance id
-- is given to every start of the burst; the instance is created, with the last start's
-- input, at `due_at` (the last start + period, or the first + max_wait). `claimed_until`:
-- a process is creating it (a lease, so one that dies leaves it to another).
CREATE TABLE debounces (
    instance_id   BLOB PRIMARY KEY,
    workflow_id   BLOB NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    input         TEXT NOT NULL,
    starts        BIGINT NOT NULL,
    first_at      TEXT NOT NULL,
    last_at       TEXT NOT NULL,
    due_at        TEXT NOT NULL,
    claimed_until TEXT
);
CREATE UNIQUE INDEX debounces_gathering ON debounces (workflow_id, key) WHERE claimed_until IS NULL;
CREATE INDEX debounces_due ON debounces (due_at);
