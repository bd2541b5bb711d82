-- Approvals (`approval` nodes, `/api/v1/approvals`). A row is written when the node's attempt
-- asks (before the attempt's wait is committed; a row whose attempt never came to wait reads as
-- canceled). `status` is the arbiter of who closes it: a decision or the timeout moves it from
-- 'open' once, and the node's transition follows (a sweep finishes what a crash left between).
-- An open row whose node no longer waits on its attempt reads as canceled.
CREATE TABLE approvals (
    id            UUID PRIMARY KEY,
    instance_id   UUID NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    workflow_id   UUID NOT NULL,
    node_id       TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    title         TEXT NOT NULL,
    description   TEXT,
    assignees     JSONB NOT NULL,
    required      INTEGER NOT NULL,
    allow_starter BOOLEAN NOT NULL,
    form          JSONB,
    started_by    TEXT,
    status        TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    due_at        TIMESTAMPTZ,
    closed_at     TIMESTAMPTZ,
    UNIQUE (instance_id, node_id, attempt)
);
CREATE INDEX approvals_by_status ON approvals (status, id);
-- The sweep looks at recent closes only.
CREATE INDEX approvals_by_close ON approvals (closed_at);

-- Who may decide an approval, one row per name: kind 'user', 'role' or 'group'. The inbox's
-- "mine" reads these.
CREATE TABLE approval_assignees (
    approval_id UUID NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    PRIMARY KEY (approval_id, kind, name)
);
CREATE INDEX approval_assignees_by_name ON approval_assignees (kind, name, approval_id);

-- Each person's one decision on an approval.
CREATE TABLE approval_decisions (
    approval_id UUID NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    username    TEXT NOT NULL,
    decision    TEXT NOT NULL,
    response    JSONB,
    comment     TEXT,
    decided_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (approval_id, username)
);
CREATE INDEX approval_decisions_by_user ON approval_decisions (username, approval_id);

-- Who started an instance: a username, `key:<name>` for an API key; NULL for a trigger, a
-- schedule, a parent or a failure handler.
ALTER TABLE instances ADD COLUMN started_by TEXT;
-- A debounced burst's instance is started by whoever made its last start.
ALTER TABLE debounces ADD COLUMN started_by TEXT;
