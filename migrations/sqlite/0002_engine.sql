-- Same schema as migrations/postgres/0002_engine.sql in SQLite types.
-- Instances of published versions, their nodes, and the durable work queue.
CREATE TABLE instances (
    id           BLOB PRIMARY KEY,
    workflow_id  BLOB NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    status       TEXT NOT NULL,
    input        TEXT NOT NULL,
    output       TEXT,
    error        TEXT,
    business_key TEXT,
    created_at   TEXT NOT NULL,
    started_at   TEXT,
    ended_at     TEXT,
    FOREIGN KEY (workflow_id, version) REFERENCES workflow_versions (workflow_id, version)
);
CREATE INDEX instances_by_workflow ON instances (workflow_id, status, id);
CREATE INDEX instances_by_status ON instances (status, id);

-- One row per node of an instance; `position` is the node's index in the execution plan.
CREATE TABLE instance_nodes (
    instance_id BLOB NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    node_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    outcome     TEXT,
    output      TEXT,
    error       TEXT,
    started_at  TEXT,
    ended_at    TEXT,
    PRIMARY KEY (instance_id, node_id)
);

-- Work due at `due_at`: a node attempt to run, a timer to fire, a task for a worker.
-- Claimed with a lease (owner + epoch); every write by the claimant is fenced by both.
CREATE TABLE work (
    id               BLOB PRIMARY KEY,
    instance_id      BLOB NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    -- Copied from the instance so claims can take turns between workflows.
    workflow_id      BLOB NOT NULL,
    kind             TEXT NOT NULL,
    node_id          TEXT,
    attempt          INTEGER,
    queue            TEXT,
    -- What a task's worker receives.
    payload          TEXT,
    due_at           TEXT NOT NULL,
    lease_owner      TEXT,
    lease_epoch      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at TEXT
);
CREATE INDEX work_due ON work (due_at) WHERE queue IS NULL;
CREATE INDEX work_tasks ON work (queue, due_at) WHERE queue IS NOT NULL;
CREATE INDEX work_by_instance ON work (instance_id);
