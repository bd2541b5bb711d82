-- Settings kept by the server itself (for example the generated token-signing secret).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE users (
    id            UUID PRIMARY KEY,
    username      TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'editor', 'admin')),
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    CONSTRAINT users_username_key UNIQUE (username)
);

CREATE TABLE api_keys (
    id         UUID PRIMARY KEY,
    name       TEXT NOT NULL,
    prefix     TEXT NOT NULL,
    key_hash   TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'editor', 'admin')),
    created_by TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ,
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);

CREATE TABLE workflows (
    id             UUID PRIMARY KEY,
    name           TEXT NOT NULL,
    description    TEXT,
    draft          JSONB NOT NULL,
    -- Bumped by every draft save; the ETag is derived from it.
    draft_rev      BIGINT NOT NULL,
    latest_version BIGINT,
    archived       BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);

-- Versions are immutable: rows are inserted by publish and never updated.
CREATE TABLE workflow_versions (
    workflow_id  UUID NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version      BIGINT NOT NULL,
    definition   JSONB NOT NULL,
    note         TEXT,
    published_by TEXT,
    published_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workflow_id, version)
);
