-- Same number as migrations/postgres/0021_content_search.sql, which adds a GIN index on
-- `instances.input` for content filters. SQLite has no index over any JSON path: its content
-- filters (`json_type` and `json_extract`) read the rows the other filters leave. Nothing to
-- change here; the statement keeps the migration non-empty.
SELECT 1;
