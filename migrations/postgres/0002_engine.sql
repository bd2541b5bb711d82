-- Instances of published versions, their nodes, and the durable work queue.
CREATE TABLE instances (
    id           UUID PRIMARY KEY,
    workflow_id  UUID NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version      BIGINT NOT NULL,
    status       TEXT NOT NULL,
    input        JSONB NOT NULL,
    output       JSONB,
    error        TEXT,
    business_key TEXT,
    created_at   TIMESTAMPTZ NOT NULL,
    started_at   TIMESTAMPTZ,
    ended_at     TIMESTAMPTZ,
    FOREIGN KEY (workflow_id, version) REFERENCES workflow_versions (workflow_id, version)
);
CREATE INDEX instances_by_workflow ON instances (workflow_id, status, id);
CREATE INDEX instances_by_status ON instances (status, id);

-- One row per node of an instance; `position` is the node's index in the execution plan.
CREATE TABLE instance_nodes (
    instance_id UUID NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    node_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    outcome     TEXT,
    output      JSONB,
    error       TEXT,
    started_at  TIMESTAMPTZ,
    ended_at    TIMESTAMPTZ,
    PRIMARY KEY (instance_id, node_id)
);

-- Work due at `due_at`: a node attempt to run, a timer to fire, a task for a worker.
-- Claimed with a lease (owner + epoch); every write by the claimant is fenced by both.
CREATE TABLE work (
    id               UUID PRIMARY KEY,
    instance_id      UUID NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    -- Copied from the instance so claims can take turns between workflows.
    workflow_id      UUID NOT NULL,
    kind             TEXT NOT NULL,
    node_id          TEXT,
    attempt          INTEGER,
    queue            TEXT,
    -- What a task's worker receives.
    payload          JSONB,
    due_at           TIMESTAMPTZ NOT NULL,
    lease_owner      TEXT,
    lease_epoch      BIGINT NOT NULL DEFAULT 0,
    lease_expires_at TIMESTAMPTZ
);
CREATE INDEX work_due ON work (due_at) WHERE queue IS NULL;
CREATE INDEX work_tasks ON work (queue, due_at) WHERE queue IS NOT NULL;
CREATE INDEX work_by_instance ON work (instance_id);
