-- Failure triage (`GET /api/v1/failures`): the node whose failure ended an instance, and its
-- error's class (numbers, ids and quoted values folded, `trellis_model::failure`), so failures
-- group by what went wrong rather than by their exact text. Set when an instance fails or times
-- out, cleared when it is retried.
ALTER TABLE instances ADD COLUMN failed_node TEXT;
ALTER TABLE instances ADD COLUMN error_class TEXT;
-- Two indexes of failures only, each with every column the grouping reads, so the groups come
-- from an index alone; each database's planner takes the one it reads faster. Postgres reads
-- the range of `ended_at` and hashes the groups (44 ms for 100,000 failures, 99 ms with the
-- other index); SQLite walks each group's range in group order without a temporary b-tree
-- (40 ms, 182 ms without it). Written only when an instance fails.
CREATE INDEX instances_failures_by_end ON instances (ended_at, workflow_id, failed_node, error_class, id)
    WHERE status IN ('failed', 'timed_out');
CREATE INDEX instances_failures_by_group ON instances (workflow_id, failed_node, error_class, ended_at, id)
    WHERE status IN ('failed', 'timed_out');
