-- Same as migrations/postgres/0010_sessions.sql, in SQLite's types. One row per sign-in,
-- named by the token's `sid`; deleting it (sign-out, password change, the user's deletion)
-- ends the session server-side.
CREATE TABLE sessions (
    id         BLOB PRIMARY KEY,
    user_id    BLOB NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);
