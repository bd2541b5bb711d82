-- Failure handlers: a workflow's `on_failure` handler run records the failed instance it
-- handles (the link both ways: the failed instance finds its handler by this column) and how
-- deep it sits in a chain of handlers (a handler's failure starts its own handler). No foreign
-- key: a purged failed instance leaves the link dangling, and the API then shows the id alone.
ALTER TABLE instances ADD COLUMN handles_failure_of BLOB;
ALTER TABLE instances ADD COLUMN failure_depth INTEGER NOT NULL DEFAULT 0;
CREATE INDEX instances_by_failure ON instances (handles_failure_of) WHERE handles_failure_of IS NOT NULL;
