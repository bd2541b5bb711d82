//! Single sign-on's rows: the sign-in attempts between the redirect to the provider and its
//! callback, and the users the provider vouches for (found by its `subject`). The trait here,
//! the SQL in `queries/sso.rs` (one body for both backends).

use super::{NewUser, Result, UserRecord};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use trellis_model::Role;
use uuid::Uuid;

/// One browser's sign-in through the provider, named by its `state`.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct OidcAttempt {
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// A same-origin path, checked before it is stored.
    pub return_to: String,
    pub expires_at: DateTime<Utc>,
    /// Set when the command line began it: the loopback port its result goes to.
    pub cli_port: Option<i32>,
    /// The PKCE challenge of the command line's own verifier (with `cli_port`).
    pub cli_challenge: Option<String>,
}

/// A finished command-line sign-in, until the command line trades its code for a session.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct OidcHandoff {
    /// SHA-256 of the one-time code (the code itself is only in the loopback redirect).
    pub code_hash: String,
    pub challenge: String,
    pub user_id: Uuid,
    pub id_token: String,
    pub expires_at: DateTime<Utc>,
}

/// What the provider says of a user at a sign-in, and the role the mapping gave.
#[derive(Debug, Clone, PartialEq)]
pub struct SsoProfile<'a> {
    pub subject: &'a str,
    pub role: Role,
    pub groups: &'a [String],
}

#[async_trait]
pub trait SsoStore: Send + Sync + 'static {
    /// Records an attempt, first deleting expired ones (abandoned at the provider's form).
    async fn insert_oidc_attempt(&self, attempt: &OidcAttempt, now: DateTime<Utc>) -> Result<()>;
    /// Takes (deletes and returns) the attempt named `state`: a state answers once, so a
    /// replayed callback finds nothing. An expired one is taken too, and `None` answered.
    async fn take_oidc_attempt(&self, state: &str, now: DateTime<Utc>) -> Result<Option<OidcAttempt>>;
    /// Records a finished command-line sign-in, first deleting expired ones.
    async fn insert_oidc_handoff(&self, handoff: &OidcHandoff, now: DateTime<Utc>) -> Result<()>;
    /// Takes (deletes and returns) the handoff with this code hash: a code trades once. An
    /// expired one is taken too, and `None` answered.
    async fn take_oidc_handoff(&self, code_hash: &str, now: DateTime<Utc>) -> Result<Option<OidcHandoff>>;
    /// The `oidc` user with this provider subject.
    async fn user_by_subject(&self, subject: &str) -> Result<Option<UserRecord>>;
    /// Inserts an `oidc` user (its `password_hash` is ignored: none works); `false` if the
    /// username is taken.
    async fn insert_sso_user(&self, user: &NewUser, profile: &SsoProfile<'_>) -> Result<bool>;
    /// Writes the role and groups of a sign-in to the user (found by id); turns a local user
    /// into an `oidc` one when linking (its password stops working and its sessions end).
    async fn record_sso_profile(&self, user: Uuid, profile: &SsoProfile<'_>) -> Result<bool>;
    /// An admin's groups for a local user; `false` if there is no such user.
    async fn set_groups(&self, user: Uuid, groups: &[String]) -> Result<bool>;
}

pub(super) const DELETE_EXPIRED_ATTEMPTS: &str = "DELETE FROM oidc_attempts WHERE expires_at <= $1";
pub(super) const INSERT_ATTEMPT: &str = "INSERT INTO oidc_attempts (state, nonce, pkce_verifier, return_to, \
    expires_at, cli_port, cli_challenge) VALUES ($1, $2, $3, $4, $5, $6, $7)";
pub(super) const TAKE_ATTEMPT: &str = "DELETE FROM oidc_attempts WHERE state = $1 \
    RETURNING state, nonce, pkce_verifier, return_to, expires_at, cli_port, cli_challenge";
pub(super) const DELETE_EXPIRED_HANDOFFS: &str = "DELETE FROM oidc_handoffs WHERE expires_at <= $1";
pub(super) const INSERT_HANDOFF: &str =
    "INSERT INTO oidc_handoffs (code_hash, challenge, user_id, id_token, expires_at) VALUES ($1, $2, $3, $4, $5)";
pub(super) const TAKE_HANDOFF: &str = "DELETE FROM oidc_handoffs WHERE code_hash = $1 \
    RETURNING code_hash, challenge, user_id, id_token, expires_at";
pub(super) const USER_BY_SUBJECT: &str =
    const_format::concatcp!(super::accounts::USER_COLUMNS, " FROM users WHERE source = 'oidc' AND subject = $1");
/// No password verifies against this: it is no PHC string, and sign-in refuses `oidc` users
/// before it looks at the hash anyway.
pub(super) const NO_PASSWORD: &str = "!single-sign-on";
pub(super) const INSERT_SSO_USER: &str = "INSERT INTO users (id, username, password_hash, role, created_at, \
    updated_at, source, subject, groups) VALUES ($1, $2, $3, $4, $5, $5, 'oidc', $6, $7) ON CONFLICT (username) DO NOTHING";
pub(super) const RECORD_SSO_PROFILE: &str = "UPDATE users SET source = 'oidc', subject = $1, role = $2, groups = $3, \
    password_hash = $4, updated_at = $5 WHERE id = $6";
/// A local user turned `oidc` by linking: the sessions its password opened end.
pub(super) const DELETE_PASSWORD_SESSIONS: &str = "DELETE FROM sessions WHERE user_id = $1 AND id_token IS NULL";
pub(super) const SET_GROUPS: &str = "UPDATE users SET groups = $1, updated_at = $2 WHERE id = $3";
