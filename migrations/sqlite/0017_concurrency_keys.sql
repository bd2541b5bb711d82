-- Concurrency keys: the value of the workflow's `concurrency_key` expression for an instance,
-- as JSON text (so the number 1 and the string "1" are different keys), fixed when it starts.
ALTER TABLE instances ADD COLUMN concurrency_key TEXT;
-- How many with a key run, and a key's queue in order (`slot_sql.rs`).
CREATE INDEX instances_by_concurrency_key ON instances (workflow_id, concurrency_key, status, id)
    WHERE concurrency_key IS NOT NULL;
-- The keys that have instances waiting, read without touching finished instances.
CREATE INDEX instances_queued_by_key ON instances (workflow_id, concurrency_key, id)
    WHERE status = 'queued' AND concurrency_key IS NOT NULL;
