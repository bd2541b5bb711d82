-- Triggers start instances of a workflow: a signed webhook or a cron schedule.
CREATE TABLE triggers (
    id                    UUID PRIMARY KEY,
    workflow_id           UUID NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    kind                  TEXT NOT NULL,
    name                  TEXT,
    paused                BOOLEAN NOT NULL,
    -- The kind's settings (preset, input mapping, rate limit; expression, zone, policies).
    spec                  JSONB NOT NULL,
    -- Webhooks: the signing secret, kept as-is because verifying needs it; the previous one
    -- stays valid until `previous_secret_until` after a rotation.
    secret                TEXT,
    previous_secret       TEXT,
    previous_secret_until TIMESTAMPTZ,
    -- Cron: the next tick to fire (NULL while paused), a tick held back by `queue_one`,
    -- and the lease of the process firing it.
    next_fire_at          TIMESTAMPTZ,
    pending_fire_at       TIMESTAMPTZ,
    fire_owner            TEXT,
    fire_lease_until      TIMESTAMPTZ,
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX triggers_by_workflow ON triggers (workflow_id, id);
CREATE INDEX triggers_due ON triggers (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- What happened to each webhook delivery and each cron tick: the delivery log, the
-- webhook-id dedupe (24 h) and, through `instance_id`, which instances a trigger started.
CREATE TABLE trigger_deliveries (
    id           UUID PRIMARY KEY,
    trigger_id   UUID NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
    received_at  TIMESTAMPTZ NOT NULL,
    -- Webhooks: whether the signature checked out; NULL for cron ticks.
    verified     BOOLEAN,
    -- `webhook-id` or `X-GitHub-Delivery`; NULL for cron ticks.
    delivery_key TEXT,
    scheduled_at TIMESTAMPTZ,
    outcome      TEXT NOT NULL,
    status       INTEGER,
    reason       TEXT,
    instance_id  UUID
);
CREATE INDEX trigger_deliveries_by_trigger ON trigger_deliveries (trigger_id, id);
CREATE INDEX trigger_deliveries_by_key ON trigger_deliveries (trigger_id, delivery_key);
CREATE INDEX trigger_deliveries_by_instance ON trigger_deliveries (instance_id);
-- For the hourly purge of entries past retention.
CREATE INDEX trigger_deliveries_by_time ON trigger_deliveries (received_at);
