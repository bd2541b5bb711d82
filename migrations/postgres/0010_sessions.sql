-- One row per sign-in, named by the `sid` claim of the token it issued. Every request with
-- a token reads its row (joined to the user, for the current role), so a session ends
-- server-side: on sign-out (its row is deleted), on a password change (all of the user's
-- rows are deleted), and with its user (the cascade). Expired rows are deleted at sign-in.
CREATE TABLE sessions (
    id         UUID PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);
