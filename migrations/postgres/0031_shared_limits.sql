-- Shared limits (`/api/v1/limits`): a concurrency and/or a rate over time that every node
-- attempt naming the limit is held to, across workflows and processes. `paused_until`: a call
-- under the limit was answered 429 or 503 with `Retry-After`; nothing under it begins before.
-- A rate's window is `rate_marks` rows of scope `limit:<name>` (one per attempt begun).
CREATE TABLE shared_limits (
    name           TEXT PRIMARY KEY,
    concurrency    INTEGER,
    rate_limit     INTEGER,
    rate_period_ms BIGINT,
    paused_until   TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);

-- A place a node attempt (a map's: one item's) holds under a limit (`state` 'holding'), or
-- waits for ('waiting', with the deferred work item to wake and when it will look again).
-- A holding row counts while its attempt is its node's current running attempt, so a place
-- outlives its process only until that attempt is judged lost (kill -9 frees it then).
CREATE TABLE limit_holds (
    holder      TEXT PRIMARY KEY,
    limit_name  TEXT NOT NULL,
    instance_id UUID NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    node_id     TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    state       TEXT NOT NULL,
    work_id     UUID,
    since       TIMESTAMPTZ NOT NULL,
    until       TIMESTAMPTZ
);
CREATE INDEX limit_holds_limit ON limit_holds (limit_name, state, since);
CREATE INDEX limit_holds_instance ON limit_holds (instance_id);
