-- The command line's sign-in through the browser when the provider has no device flow
-- (RFC 8252's loopback redirect). An attempt begun for the command line names the loopback
-- port to hand the result to and the PKCE challenge of a verifier only the command line
-- holds (both NULL for a browser's own sign-in).
ALTER TABLE oidc_attempts ADD COLUMN cli_port INTEGER;
ALTER TABLE oidc_attempts ADD COLUMN cli_challenge TEXT;

-- A finished command-line sign-in waiting for the command line to trade its one-time code
-- (kept hashed) and its PKCE verifier for a session; taken (deleted) by the first trade.
CREATE TABLE oidc_handoffs (
    code_hash  TEXT PRIMARY KEY,
    challenge  TEXT NOT NULL,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id_token   TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX oidc_handoffs_expires_at ON oidc_handoffs (expires_at);
