//! Accounts: users, API keys and sign-in sessions; the rows and trait here, the SQL in
//! `queries/accounts.rs` (one body for both backends).
//!
//! A session is a row named by the `sid` of the token its sign-in issued. Reading a token's
//! caller joins its session to its user: a deleted session (sign-out, password change) or
//! user (the cascade) ends it, and the role is the user's current one, never the token's.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use trellis_model::{Role, UserSource};
use uuid::Uuid;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRecord {
    pub id: Uuid,
    pub username: String,
    pub password_hash: String,
    /// A role this build does not know is a decode error naming it, never a lesser role.
    pub role: Role,
    pub created_at: DateTime<Utc>,
    /// When an admin disabled the user; `None` while enabled.
    pub disabled_at: Option<DateTime<Utc>>,
    pub source: UserSource,
    /// The provider's `sub` of an `oidc` user.
    pub subject: Option<String>,
    pub groups: Json<Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct NewUser {
    pub id: Uuid,
    pub username: String,
    pub password_hash: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
}

impl NewUser {
    pub fn new(username: &str, password_hash: String, role: Role) -> Self {
        NewUser { id: Uuid::now_v7(), username: username.to_owned(), password_hash, role, created_at: Utc::now() }
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApiKeyRecord {
    pub id: Uuid,
    pub name: String,
    /// The key's first characters, to recognise it in lists; not enough to use it.
    pub prefix: String,
    /// SHA-256 of the whole key, hex.
    pub key_hash: String,
    pub role: Role,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A session as sign-in records it.
#[derive(Debug, Clone, Copy)]
pub struct NewSession<'a> {
    pub id: Uuid,
    pub user: Uuid,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub id_token: Option<&'a str>,
}

/// A session's user as it is now.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SessionUser {
    pub user_id: Uuid,
    pub username: String,
    pub role: Role,
}

#[async_trait]
pub trait AccountStore: Send + Sync + 'static {
    async fn count_users(&self) -> Result<i64>;
    /// Inserts a user; `false` if the username is taken.
    async fn insert_user(&self, user: &NewUser) -> Result<bool>;
    async fn user_by_name(&self, username: &str) -> Result<Option<UserRecord>>;
    async fn user_by_id(&self, id: Uuid) -> Result<Option<UserRecord>>;
    /// `false` if there is no such user. Ends every session of the user.
    async fn set_password(&self, username: &str, hash: &str) -> Result<bool>;

    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<()>;
    /// A live (not revoked) key with this hash.
    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>>;
    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRecord>>;
    /// `false` if there is no such live key. Deletes the key's private saved views.
    async fn revoke_api_key(&self, id: Uuid) -> Result<bool>;

    /// Records a new session of `user` until `expires_at`, first deleting expired sessions
    /// (of every user), so the table holds only sessions that could still be used. A single
    /// sign-on session keeps the provider's `id_token` for signing out there too.
    async fn insert_session(&self, session: &NewSession<'_>) -> Result<()>;
    /// The provider's ID token of a single sign-on session (`None`: a password session, or ended).
    async fn session_id_token(&self, id: Uuid) -> Result<Option<String>>;
    /// The user of an unexpired session, or `None` if it ended (or never existed).
    async fn session_user(&self, id: Uuid, now: DateTime<Utc>) -> Result<Option<SessionUser>>;
    /// Ends one session; `false` if it had already ended.
    async fn delete_session(&self, id: Uuid) -> Result<bool>;
    /// `false` if there is no such user. Sessions carry on with the new role.
    async fn set_role(&self, user: Uuid, role: Role) -> Result<bool>;
    /// Deletes a user, (by the cascade) their sessions and their private saved views; `false` if
    /// there is no such user.
    async fn delete_user(&self, user: Uuid) -> Result<bool>;
    /// Every user, by username.
    async fn list_users(&self) -> Result<Vec<UserRecord>>;
    /// Disables (ending every session, in the same transaction) or enables a user; `false` if
    /// there is no such user.
    async fn set_disabled(&self, user: Uuid, at: Option<DateTime<Utc>>) -> Result<bool>;
    /// Admins who are not disabled.
    async fn count_enabled_admins(&self) -> Result<i64>;
}

// The statements `queries/accounts.rs` runs, named for what they do.
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
pub(super) const DELETE_EXPIRED_SESSIONS: &str = "DELETE FROM sessions WHERE expires_at <= $1";
pub(super) const INSERT_SESSION: &str =
    "INSERT INTO sessions (id, user_id, created_at, expires_at, id_token) VALUES ($1, $2, $3, $4, $5)";
pub(super) const SESSION_ID_TOKEN: &str = "SELECT id_token FROM sessions WHERE id = $1";
pub(super) const SESSION_USER: &str =
    "SELECT u.id AS user_id, u.username, u.role FROM sessions s JOIN users u ON u.id = s.user_id WHERE \
    s.id = $1 AND s.expires_at > $2 AND u.disabled_at IS NULL";
pub(super) const DELETE_SESSION: &str = "DELETE FROM sessions WHERE id = $1";
pub(super) const SET_ROLE: &str = "UPDATE users SET role = $1, updated_at = $2 WHERE id = $3";
pub(super) const DELETE_USER: &str = "DELETE FROM users WHERE id = $1";
/// A user's or API key's private views go with it (no one else can see them); `$2` is `false`,
/// bound so the same text serves both dialects' booleans. Shared views stay, under the name
/// they were saved with, for the team that uses them (an admin may delete them).
pub(super) const DELETE_PRIVATE_VIEWS: &str = "DELETE FROM saved_views WHERE owner_id = $1 AND shared = $2";
pub(super) const LIST_USERS: &str = const_format::concatcp!(USER_COLUMNS, " FROM users ORDER BY username");
pub(super) const SET_USER_DISABLED: &str = "UPDATE users SET disabled_at = $1, updated_at = $2 WHERE id = $3";
pub(super) const DELETE_USER_SESSIONS: &str = "DELETE FROM sessions WHERE user_id = $1";
pub(super) const COUNT_ENABLED_ADMINS: &str = "SELECT COUNT(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL";
