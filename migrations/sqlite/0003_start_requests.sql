-- Start requests remembered by their Idempotency-Key: a retried request gets the first answer.
CREATE TABLE start_requests (
    workflow_id     BLOB NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    instance_id     BLOB NOT NULL,
    status          TEXT NOT NULL,
    version         INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (workflow_id, idempotency_key)
);
