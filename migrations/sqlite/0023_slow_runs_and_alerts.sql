-- Slow runs: the threshold a running node of (workflow, version, node) is judged by, in ms.
-- `basis` `stuck_after_ms`: the node's own setting, written when the version is published;
-- `p95`: k× the p95 of the node's last 100 successful durations, refreshed periodically for
-- the nodes running now (`backend/src/slow.rs`). The list's `?slow=true` joins running node
-- rows to this table, so it is one indexed lookup per running node, never a percentile.
CREATE TABLE slow_thresholds (
    workflow_id  BLOB NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    node_id      TEXT NOT NULL,
    threshold_ms INTEGER NOT NULL,
    basis        TEXT NOT NULL,
    refreshed_at TEXT NOT NULL,
    PRIMARY KEY (workflow_id, version, node_id)
);
