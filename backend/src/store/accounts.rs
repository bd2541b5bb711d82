//! Sign-in sessions and account changes, the trait here, the SQL in
//! `queries/accounts.rs` (one body for both backends).
//!
//! A session is a row named by the `sid` of the token its sign-in issued. Reading a token's
//! caller joins its session to its user: a deleted session (sign-out, password change) or
//! user (the cascade) ends it, and the role is the user's current one, never the token's.

use super::{Result, UserRecord};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use trellis_model::Role;
use uuid::Uuid;

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
pub(super) const LIST_USERS: &str =
    const_format::concatcp!(super::catalog::USER_COLUMNS, " FROM users ORDER BY username");
pub(super) const SET_USER_DISABLED: &str = "UPDATE users SET disabled_at = $1, updated_at = $2 WHERE id = $3";
pub(super) const DELETE_USER_SESSIONS: &str = "DELETE FROM sessions WHERE user_id = $1";
pub(super) const COUNT_ENABLED_ADMINS: &str = "SELECT COUNT(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL";
