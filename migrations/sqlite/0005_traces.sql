-- Same schema as migrations/postgres/0005_traces.sql in SQLite types.
-- Execution traces: every instance's append-only event history, and what the span
-- bookkeeping needs on instances and their nodes.
CREATE TABLE instance_events (
    instance_id BLOB NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    -- 1, 2, 3, ... per instance, no gaps: assigned under the instance's row lock.
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    at          TEXT NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (instance_id, seq)
);

-- W3C trace context: the instance's trace (its own, or the caller's from `traceparent`)
-- and the caller's span the instance span hangs under.
ALTER TABLE instances ADD COLUMN trace_id TEXT;
ALTER TABLE instances ADD COLUMN parent_span_id TEXT;

-- When the node's current attempt was dispatched (its span's start), and the wait it is
-- in (timer, signal, task, backoff, slot) with when that began.
ALTER TABLE instance_nodes ADD COLUMN dispatched_at TEXT;
ALTER TABLE instance_nodes ADD COLUMN wait_kind TEXT;
ALTER TABLE instance_nodes ADD COLUMN wait_started_at TEXT;
