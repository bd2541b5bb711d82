-- Same schema as migrations/postgres, in SQLite's types: UUIDs as 16-byte BLOBs,
-- times as RFC 3339 TEXT, JSON as TEXT, booleans as INTEGER.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE users (
    id            BLOB PRIMARY KEY,
    username      TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'editor', 'admin')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    CONSTRAINT users_username_key UNIQUE (username)
);

CREATE TABLE api_keys (
    id         BLOB PRIMARY KEY,
    name       TEXT NOT NULL,
    prefix     TEXT NOT NULL,
    key_hash   TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'editor', 'admin')),
    created_by TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);

CREATE TABLE workflows (
    id             BLOB PRIMARY KEY,
    name           TEXT NOT NULL,
    description    TEXT,
    draft          TEXT NOT NULL,
    draft_rev      INTEGER NOT NULL,
    latest_version INTEGER,
    archived       INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

CREATE TABLE workflow_versions (
    workflow_id  BLOB NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    definition   TEXT NOT NULL,
    note         TEXT,
    published_by TEXT,
    published_at TEXT NOT NULL,
    PRIMARY KEY (workflow_id, version)
);
