-- Same schema as migrations/postgres/0008_audit.sql in SQLite types.
-- The audit log: who did what to which resource, when, and how it ended. Written after the
-- action by a background writer (best-effort durable, see ARCHITECTURE.md); never updated.
CREATE TABLE audit_log (
    -- UUIDv7, so id order is time order and the id is the pagination cursor.
    id         BLOB PRIMARY KEY,
    at         TEXT NOT NULL,
    -- The principal's id (a user's or an API key's); NULL for anonymous callers and for
    -- failed sign-ins, where `actor_name` is the username tried.
    actor_id   TEXT,
    -- A username, `key:<name>` for API keys, or `anonymous`.
    actor_name TEXT NOT NULL,
    actor_role TEXT,
    -- Method and route template, e.g. `POST /api/v1/workflows/{id}/versions`.
    action     TEXT NOT NULL,
    -- The resource id from the path, or the id a create returned.
    target     TEXT,
    status     INTEGER NOT NULL,
    -- The problem's `detail` for failures; never a request or response body.
    detail     TEXT,
    request_id TEXT
);
CREATE INDEX audit_log_by_actor ON audit_log (actor_name, id);
CREATE INDEX audit_log_by_target ON audit_log (target, id);
CREATE INDEX audit_log_by_at ON audit_log (at);
