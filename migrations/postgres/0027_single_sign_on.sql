-- Single sign-on (OpenID Connect). A user is `local` (signs in with a password) or `oidc`
-- (made at their first sign-in through the provider, found again by the provider's
-- `subject`; no password works for them). `groups` is a JSON array: the provider's groups at
-- the last sign-in, or what an admin gave a local user.
ALTER TABLE users ADD COLUMN source TEXT NOT NULL DEFAULT 'local' CHECK (source IN ('local', 'oidc'));
ALTER TABLE users ADD COLUMN subject TEXT;
ALTER TABLE users ADD COLUMN groups JSONB NOT NULL DEFAULT '[]';
CREATE UNIQUE INDEX users_oidc_subject ON users (subject) WHERE source = 'oidc';

-- An SSO session keeps the provider's ID token for the end-session request's
-- `id_token_hint` (NULL for password sessions).
ALTER TABLE sessions ADD COLUMN id_token TEXT;

-- One browser's sign-in through the provider between the redirect and the callback, named by
-- its `state`; taken (deleted) by the callback that uses it, so a state answers once.
CREATE TABLE oidc_attempts (
    state         TEXT PRIMARY KEY,
    nonce         TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    return_to     TEXT NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX oidc_attempts_expires_at ON oidc_attempts (expires_at);
