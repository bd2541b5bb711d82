-- Slow runs: the threshold a running node of (workflow, version, node) is judged by, in ms.
-- `basis` `stuck_after_ms`: the node's own setting, written when the version is published;
-- `p95`: k× the p95 of the node's last 100 successful durations, refreshed periodically for
-- the nodes running now (`backend/src/slow.rs`). The list's `?slow=true` joins running node
-- rows to this table, so it is one indexed lookup per running node, never a percentile.
CREATE TABLE slow_thresholds (
    workflow_id  UUID NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version      BIGINT NOT NULL,
    node_id      TEXT NOT NULL,
    threshold_ms BIGINT NOT NULL,
    basis        TEXT NOT NULL,
    refreshed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workflow_id, version, node_id)
);

-- Alerts (`backend/src/alerts/`): rules, and one delivery row per alert to send. A delivery
-- is unique per (rule, source_key) — `{instance}:{run}` of an end, `slow:{instance}:{run}`,
-- `queue_depth:{over_since}`, `test:{id}` — so whoever records it twice (a redone work item,
-- two processes) records it once. The secret signs deliveries, so it is kept as-is, as a
-- webhook trigger's is. `over_since`: since when a `queue_depth` rule's queue has been over
-- its threshold (NULL: it is not).
CREATE TABLE alert_rules (
    id          UUID PRIMARY KEY,
    name        TEXT NOT NULL,
    event       TEXT NOT NULL,
    workflow_id UUID REFERENCES workflows (id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    threshold   BIGINT,
    for_ms      BIGINT,
    dedupe_ms   BIGINT,
    over_since  TIMESTAMPTZ,
    created_by  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX alert_rules_by_event ON alert_rules (event, workflow_id);

-- `status`: pending, delivered, failed (attempts used up), suppressed (counted on the
-- delivery `suppressed_by` of the same failure group `group_key`, within the rule's window).
-- A sender claims due pending rows with a lease (`lease_owner`, `lease_until`).
CREATE TABLE alert_deliveries (
    id              UUID PRIMARY KEY,
    rule_id         UUID NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    source_key      TEXT NOT NULL,
    group_key       TEXT,
    instance_id     UUID,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL,
    suppressed_by   UUID,
    attempts        INTEGER NOT NULL,
    next_attempt_at TIMESTAMPTZ,
    lease_owner     TEXT,
    lease_until     TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (rule_id, source_key)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX alert_deliveries_by_rule ON alert_deliveries (rule_id, created_at);
CREATE INDEX alert_deliveries_by_group ON alert_deliveries (rule_id, group_key, created_at);
CREATE INDEX alert_deliveries_suppressed ON alert_deliveries (suppressed_by) WHERE suppressed_by IS NOT NULL;

-- Each try at posting a delivery: the log `GET /alerts/{id}/deliveries` shows.
CREATE TABLE alert_attempts (
    delivery_id UUID NOT NULL REFERENCES alert_deliveries (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    status_code INTEGER,
    error       TEXT,
    PRIMARY KEY (delivery_id, attempt)
);
