-- Failure triage (`GET /api/v1/failures`): the node whose failure ended an instance, and its
-- error's class (numbers, ids and quoted values folded, `trellis_model::failure`), so failures
-- group by what went wrong rather than by their exact text. Set when an instance fails or times
-- out, cleared when it is retried.
ALTER TABLE instances ADD COLUMN failed_node TEXT;
ALTER TABLE instances ADD COLUMN error_class TEXT;
-- Holds every column the grouping reads, for failures only: the groups of a day's failures
-- are read from this index alone, never from the instances' rows.
CREATE INDEX instances_failures ON instances (ended_at, workflow_id, failed_node, error_class, id)
    WHERE status IN ('failed', 'timed_out');
