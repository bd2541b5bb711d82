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

-- Alerts (`backend/src/alerts/`): rules, and one delivery row per alert to send. A delivery
-- is unique per (rule, source_key) — `{instance}:{run}` of an end, `slow:{instance}:{run}`,
-- `queue_depth:{over_since}`, `test:{id}` — so whoever records it twice (a redone work item,
-- two processes) records it once. The secret signs deliveries, so it is kept as-is, as a
-- webhook trigger's is. `over_since`: since when a `queue_depth` rule's queue has been over
-- its threshold (NULL: it is not).
CREATE TABLE alert_rules (
    id          BLOB PRIMARY KEY,
    name        TEXT NOT NULL,
    event       TEXT NOT NULL,
    workflow_id BLOB REFERENCES workflows (id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    threshold   INTEGER,
    for_ms      INTEGER,
    dedupe_ms   INTEGER,
    over_since  TEXT,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX alert_rules_by_event ON alert_rules (event, workflow_id);

-- `status`: pending, delivered, failed (attempts used up), suppressed (counted on the
-- delivery `suppressed_by` of the same failure group `group_key`, within the rule's window).
-- A sender claims due pending rows with a lease (`lease_owner`, `lease_until`).
CREATE TABLE alert_deliveries (
    id              BLOB PRIMARY KEY,
    rule_id         BLOB NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    source_key      TEXT NOT NULL,
    group_key       TEXT,
    instance_id     BLOB,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL,
    suppressed_by   BLOB,
    attempts        INTEGER NOT NULL,
    next_attempt_at TEXT,
    lease_owner     TEXT,
    lease_until     TEXT,
    created_at      TEXT NOT NULL,
    UNIQUE (rule_id, source_key)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX alert_deliveries_by_rule ON alert_deliveries (rule_id, created_at);
CREATE INDEX alert_deliveries_by_group ON alert_deliveries (rule_id, group_key, created_at);
CREATE INDEX alert_deliveries_suppressed ON alert_deliveries (suppressed_by) WHERE suppressed_by IS NOT NULL;

-- Each try at posting a delivery: the log `GET /alerts/{id}/deliveries` shows.
CREATE TABLE alert_attempts (
    delivery_id BLOB NOT NULL REFERENCES alert_deliveries (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at          TEXT NOT NULL,
    status_code INTEGER,
    error       TEXT,
    PRIMARY KEY (delivery_id, attempt)
);
