-- Start requests remembered by their Idempotency-Key: a retried request gets the first answer.
CREATE TABLE start_requests (
    workflow_id     UUID NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    instance_id     UUID NOT NULL,
    status          TEXT NOT NULL,
    version         BIGINT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workflow_id, idempotency_key)
);
