-- The instances list's time range (`since`, `until` on `created_at`): without it, counting the
-- instances of the last day reads every instance. Written once per instance, at its start.
CREATE INDEX instances_by_created ON instances (created_at);
