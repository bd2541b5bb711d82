-- Broker triggers (`nats`, `amqp`, `mqtt`): what a trigger's consumer reported last. Every
-- process consumes each broker trigger, so the newest report wins; `lag` is what the broker
-- says waits for the trigger (where it says).
CREATE TABLE broker_consumers (
    trigger_id UUID PRIMARY KEY REFERENCES triggers (id) ON DELETE CASCADE,
    state      TEXT NOT NULL,
    reason     TEXT,
    lag        BIGINT,
    since      TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
