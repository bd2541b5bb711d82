//! What the `Store` trait's SQL (`queries/catalog.rs`: settings, users, API keys, workflows,
//! drafts, versions) shares with the rest: the workflow column list and `LIKE` escaping.
//! How one SQL body serves both backends: `queries/mod.rs`.

use const_format::concatcp;

/// Escapes `%`, `_` and `\` so user text matches literally inside a `LIKE` pattern.
pub(super) fn like_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

pub(super) const WORKFLOW_COLUMNS: &str =
    "id, name, description, draft, draft_rev, latest_version, archived, created_at, updated_at";

// The statements `queries/catalog.rs` runs, named for what they do.
pub(super) const PING: &str = "SELECT 1";
pub(super) const INSERT_SETTING_IF_ABSENT: &str =
    "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";
pub(super) const SETTING: &str = "SELECT value FROM settings WHERE key = $1";
pub(super) const COUNT_USERS: &str = "SELECT COUNT(*) FROM users";
pub(super) const INSERT_USER: &str =
    "INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES ($1, $2, $3, \
    $4, $5, $5) ON CONFLICT (username) DO NOTHING";
pub(super) const USER_BY_NAME: &str = const_format::concatcp!(USER_COLUMNS, " FROM users WHERE username = $1");
pub(super) const USER_BY_ID: &str = const_format::concatcp!(USER_COLUMNS, " FROM users WHERE id = $1");
/// What a `UserRecord` reads.
pub(super) const USER_COLUMNS: &str =
    "SELECT id, username, password_hash, role, created_at, disabled_at, source, subject, groups";
pub(super) const SET_PASSWORD: &str = "UPDATE users SET password_hash = $1, updated_at = $2 WHERE username = $3";
pub(super) const DELETE_SESSIONS_OF_USERNAME: &str =
    "DELETE FROM sessions WHERE user_id IN (SELECT id FROM users WHERE username = $1)";
pub(super) const INSERT_API_KEY: &str =
    "INSERT INTO api_keys (id, name, prefix, key_hash, role, created_by, created_at) VALUES ($1, $2, $3, \
    $4, $5, $6, $7)";
/// A key made by a user who is now disabled stops working with them.
pub(super) const API_KEY_BY_HASH: &str =
    "SELECT id, name, prefix, key_hash, role, created_by, created_at FROM api_keys k WHERE key_hash = $1 \
    AND revoked_at IS NULL AND NOT EXISTS (SELECT 1 FROM users u WHERE u.username = k.created_by AND \
    u.disabled_at IS NOT NULL)";
pub(super) const LIST_API_KEYS: &str =
    "SELECT id, name, prefix, key_hash, role, created_by, created_at FROM api_keys WHERE revoked_at IS \
    NULL ORDER BY id";
pub(super) const REVOKE_API_KEY: &str = "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL";
pub(super) const CREATE_WORKFLOW: &str = concatcp!(
    "INSERT INTO workflows (id, name, description, draft, draft_rev, archived, created_at, updated_at) \
    VALUES ($1, $2, $3, $4, 1, $5, $6, $6) RETURNING ",
    WORKFLOW_COLUMNS
);
pub(super) const LIST_WORKFLOWS: &str = concatcp!(
    "SELECT ",
    WORKFLOW_COLUMNS,
    " FROM workflows WHERE ($1 OR archived = $2) AND ($3 IS NULL OR id < $3) AND ($4 IS NULL OR \
    LOWER(name) LIKE $4 ESCAPE '\\') ORDER BY id DESC LIMIT $5"
);
pub(super) const GET_WORKFLOW: &str = concatcp!("SELECT ", WORKFLOW_COLUMNS, " FROM workflows WHERE id = $1");
pub(super) const WORKFLOW_NAMES_OF: &str = "SELECT id, name FROM workflows WHERE id IN (";
pub(super) const UPDATE_WORKFLOW: &str = concatcp!(
    "UPDATE workflows SET name = COALESCE($1, name), description = COALESCE($2, description), archived = \
    COALESCE($3, archived), updated_at = $4 WHERE id = $5 RETURNING ",
    WORKFLOW_COLUMNS
);
pub(super) const SAVE_DRAFT: &str =
    "UPDATE workflows SET draft = $1, draft_rev = draft_rev + 1, updated_at = $2 WHERE id = $3 AND \
    archived = $4 AND ($5 IS NULL OR draft_rev = $5) RETURNING draft_rev";
pub(super) const BUMP_LATEST_VERSION: &str =
    "UPDATE workflows SET latest_version = COALESCE(latest_version, 0) + 1, updated_at = $1 WHERE id = \
    $2 AND archived = $3 AND draft_rev = $4 RETURNING latest_version";
pub(super) const INSERT_VERSION_FROM_DRAFT: &str =
    "INSERT INTO workflow_versions (workflow_id, version, definition, note, published_by, published_at) \
    SELECT id, latest_version, draft, $1, $2, $3 FROM workflows WHERE id = $4";
pub(super) const LIST_VERSIONS: &str =
    "SELECT version, note, published_by, published_at FROM workflow_versions WHERE workflow_id = $1 \
    ORDER BY version DESC";
pub(super) const GET_VERSION: &str =
    "SELECT workflow_id, version, definition, note, published_by, published_at FROM workflow_versions \
    WHERE workflow_id = $1 AND version = $2";
pub(super) const WORKFLOW_ARCHIVED: &str = "SELECT archived FROM workflows WHERE id = $1";
