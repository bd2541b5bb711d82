-- Failure triage (`GET /api/v1/failures`): the node whose failure ended an instance, and its
-- error's class (numbers, ids and quoted values folded, `trellis_model::failure`), so failures
-- group by what went wrong rather than by their exact text. Set when an instance fails or times
-- out, cleared when it is retried. Grouped over `instances_by_end` (status, ended_at).
ALTER TABLE instances ADD COLUMN failed_node TEXT;
ALTER TABLE instances ADD COLUMN error_class TEXT;
