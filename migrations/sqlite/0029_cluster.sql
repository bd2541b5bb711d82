-- The processes serving this database. Each writes its release and, every few seconds, a
-- heartbeat: admins see who runs (GET /api/v1/cluster), a restore refuses a database a server
-- still uses, and an upgrade can wait until no process of an older release is alive.
-- `schema_known`: the newest migration that process's release carries. A process deletes its
-- row when it stops; a killed one's row goes stale and is pruned after a day.
CREATE TABLE processes (
    id           TEXT PRIMARY KEY,
    version      TEXT NOT NULL,
    schema_known BIGINT NOT NULL,
    host         TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    listen       TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    last_seen    TEXT NOT NULL,
    draining     INTEGER NOT NULL DEFAULT 0
);

-- One row: whether the database is held. `trellis restore` holds the copy it writes (no
-- schedule fires, no work is claimed, nothing is swept or alerted) until an admin resumes it,
-- so a restored copy never acts beside the original. `compatible_from`: the oldest schema a
-- process's release may know and still run here, raised by a contracting migration (one older
-- releases cannot live with); a process that knows less claims no work and says why.
CREATE TABLE cluster_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    held        INTEGER NOT NULL DEFAULT 0,
    held_reason TEXT,
    held_since  TEXT,
    resumed_at  TEXT,
    resumed_by  TEXT,
    compatible_from BIGINT NOT NULL DEFAULT 0
);
INSERT INTO cluster_state (id, held) VALUES (1, 0);

-- Backups the servers take themselves (TRELLIS_BACKUP_DIR, TRELLIS_BACKUP_EVERY). `slot`:
-- the schedule's period number (start time ÷ period), unique, so of the processes that see a
-- backup due exactly one inserts its row and takes it.
CREATE TABLE backup_runs (
    id          BLOB PRIMARY KEY,
    slot        BIGINT NOT NULL UNIQUE,
    process_id  TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    outcome     TEXT NOT NULL,
    file        TEXT,
    bytes       BIGINT,
    error       TEXT
);
CREATE INDEX backup_runs_started_at ON backup_runs (started_at);
