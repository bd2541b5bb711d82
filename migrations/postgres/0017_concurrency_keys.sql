-- Concurrency keys: the value of the workflow's `concurrency_key` expression for an instance,
-- as JSON text (so the number 1 and the string "1" are different keys), fixed when it starts.
-- Admission counts an instance's running peers with the same value through the index.
ALTER TABLE instances ADD COLUMN concurrency_key TEXT;
CREATE INDEX instances_by_concurrency_key ON instances (workflow_id, concurrency_key, status)
    WHERE concurrency_key IS NOT NULL;
