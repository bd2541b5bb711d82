-- Same schema as migrations/postgres/0007_ops_cleanup.sql in SQLite types.
-- Operations on many instances at once: bulk jobs, retention policies, and the indexes the
-- purge and the retention sweeper need.

-- A bulk action (purge, cancel) run in the background in bounded batches. Claimed with a
-- lease like `work`, so one process runs it and another takes over if it dies; `last_id`
-- is the keyset position (ids are BLOBv7, so time-ordered) and `until_id` the newest id the
-- job may touch: instances started after the job was created are never part of it.
CREATE TABLE jobs (
    id               BLOB PRIMARY KEY,
    kind             TEXT NOT NULL,
    filter           TEXT NOT NULL,
    status           TEXT NOT NULL,
    matched          INTEGER NOT NULL DEFAULT 0,
    processed        INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    created_by       TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    last_id          BLOB,
    until_id         BLOB NOT NULL,
    lease_owner      TEXT,
    lease_expires_at TEXT
);
CREATE INDEX jobs_open ON jobs (status, created_at);

-- How long terminal instances are kept, per status, in days (NULL: forever). `scope` is
-- 'default' or a workflow's id; a workflow's policy replaces the default for it.
CREATE TABLE retention_policies (
    scope          TEXT PRIMARY KEY,
    workflow_id    BLOB REFERENCES workflows (id) ON DELETE CASCADE,
    succeeded_days INTEGER,
    failed_days    INTEGER,
    canceled_days  INTEGER,
    timed_out_days INTEGER,
    updated_at     TEXT NOT NULL
);

-- The sweeper looks for old terminal instances by status and end time.
CREATE INDEX instances_by_end ON instances (status, ended_at);
-- Purging an instance removes its idempotency records.
CREATE INDEX start_requests_by_instance ON start_requests (instance_id);
