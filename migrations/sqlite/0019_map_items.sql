-- The items of `map` nodes (`backend/src/engine/map/`): one row per item of a map node's list,
-- written when the map starts (pending), as items start and as they end, in batches fenced by
-- the map attempt's lease. A later attempt of the same node (after a crash, or a retry from the
-- failed nodes) keeps the succeeded rows whose item is unchanged (`item_digest`) and runs the rest.
CREATE TABLE map_items (
    instance_id BLOB NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    node_id     TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    item_digest TEXT NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    output      TEXT,
    error       TEXT,
    child_id    BLOB,
    started_at  TEXT,
    ended_at    TEXT,
    PRIMARY KEY (instance_id, node_id, idx)
);
