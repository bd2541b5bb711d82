-- A disabled user cannot sign in; their sessions end and the API keys they created stop
-- working at once (`NULL`: enabled). Admins disable and enable from `PATCH /users/{id}`.
ALTER TABLE users ADD COLUMN disabled_at TEXT;
