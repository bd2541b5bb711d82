-- Secrets (`backend/src/secrets/`): named values sealed with XChaCha20-Poly1305 under a data key
-- of their own, which the master key wraps; both seals bind the name. Neither the master key nor
-- any value in the clear is ever written here. The key check value (the master key sealing a
-- known text) is the `secrets.master_key_check` row of `settings`.
CREATE TABLE secrets (
    name        TEXT PRIMARY KEY,
    description TEXT,
    ciphertext  BYTEA NOT NULL,
    wrapped_key BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
