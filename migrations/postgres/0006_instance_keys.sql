-- At most one live (queued, running or paused) instance per workflow and business key,
-- whatever the workflow's `key_reuse` policy: the database settles concurrent starts.
-- A start that violates it is answered 409 naming the live instance.
CREATE UNIQUE INDEX instances_one_live_per_key ON instances (workflow_id, business_key)
    WHERE business_key IS NOT NULL AND status IN ('queued', 'running', 'paused');
-- The policy checks look up earlier instances by key, terminal ones included.
CREATE INDEX instances_by_key ON instances (workflow_id, business_key, status) WHERE business_key IS NOT NULL;
-- Which run of the instance this is: 1, then one more per operator retry. The trace of
-- each run hangs under its own instance span, derived from it.
ALTER TABLE instances ADD COLUMN run INTEGER NOT NULL DEFAULT 1;
