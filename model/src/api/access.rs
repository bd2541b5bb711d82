//! Who may do what: sign-in, users, API keys and the audit trail of what they did.

use crate::{Role, UserSource};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: String,
    pub expires_in: u64,
}

/// A user: the caller (`GET /auth/me`) or one an admin created or changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Me {
    pub id: String,
    pub username: String,
    pub role: Role,
}

/// A user as `GET /users` lists them (admins only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserView {
    pub id: String,
    pub username: String,
    pub role: Role,
    /// A disabled user cannot sign in, and their sessions and API keys do not work.
    pub disabled: bool,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// `local` (a password) or `oidc` (single sign-on).
    pub source: UserSource,
    /// The provider's `sub` for an `oidc` user.
    pub subject: Option<String>,
    /// The provider's groups at the user's last sign-in, or what an admin gave a local user.
    pub groups: Vec<String>,
}

/// `role` is `viewer`, `operator`, `editor` or `admin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    pub username: String,
    pub password: String,
    /// Text, not a `Role`, in requests: a name that is no role is answered as a problem with
    /// this field (`Role::from_str` says which names are), not as a body that does not parse.
    #[cfg_attr(feature = "openapi", schema(value_type = Role))]
    pub role: String,
}

/// Any of: a new `role`, a new `password` (which ends the user's sessions), `disabled`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Role>))]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// `true` disables the user (ending their sessions; their API keys stop working), `false`
    /// enables them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// A local user's groups (an `oidc` user's come from the provider at each sign-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
}

/// `GET /auth/providers`: how one may sign in (asked before signing in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuthProviders {
    /// Whether local users may sign in with a password (`TRELLIS_PASSWORD_LOGIN`).
    pub password: bool,
    /// The single sign-on provider, when one is configured.
    pub oidc: Option<OidcProvider>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OidcProvider {
    /// What the sign-in button says: "Sign in with {name}".
    pub name: String,
    /// Where the browser goes to sign in (add `?return_to=/path`).
    pub login_url: String,
    /// `false` while the provider's discovery document cannot be fetched.
    pub reachable: bool,
}

/// `POST /auth/logout` of a single sign-on session: where the browser goes next to end the
/// provider's session too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SignedOut {
    pub end_session_url: Option<String>,
}

/// `POST /auth/oidc/mapping/preview`: a user's groups, to see what role the mapping gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MappingPreviewRequest {
    pub groups: Vec<String>,
}

/// What the group → role mapping gives for some groups, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MappingPreview {
    /// `None`: such a user is refused.
    pub role: Option<Role>,
    /// The rule that gave the role (`group=role` as configured, or `default`), if any.
    pub rule: Option<String>,
    /// The explanation in words.
    pub explanation: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateApiKey {
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Role))]
    pub role: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedApiKey {
    pub id: String,
    pub name: String,
    pub role: Role,
    /// The secret, shown this once; only its hash is stored.
    pub key: String,
}

/// A live API key in the list: never its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    /// The key's first characters, to recognise it; not enough to use it.
    pub prefix: String,
    pub role: Role,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Who did an audited action: a user, an API key (`key:<name>`), `anonymous`, or for a
/// sign-in the username tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditActor {
    pub id: Option<String>,
    pub name: String,
    pub role: Option<Role>,
}

/// One entry of `GET /api/v1/audit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    pub id: String,
    pub at: DateTime<Utc>,
    pub actor: AuditActor,
    /// Method and route template, e.g. `POST /api/v1/workflows/{id}/versions`.
    pub action: String,
    /// The resource id from the path, or the id a create returned.
    pub target: Option<String>,
    /// The HTTP status of the answer.
    pub status: u16,
    /// For failures, the problem's `detail`; for a decision on an approval, which way it went
    /// (`approve: closed the approval approved`).
    pub detail: Option<String>,
    pub request_id: Option<String>,
}

/// The command line's device sign-in as the server began it (`POST /auth/oidc/device`): what
/// to show the person, and what to poll `/auth/oidc/device/token` with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeviceStarted {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    /// Seconds between polls.
    pub interval: u64,
}

/// The command line trading a loopback sign-in's one-time code, with the PKCE verifier whose
/// challenge began it, for a session (`POST /auth/oidc/cli/token`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoopbackTokenRequest {
    pub code: String,
    pub code_verifier: String,
}

/// What the sign-in page and the command line say about a single sign-on refusal (its code,
/// `/login?error=CODE`); the reason in full is in the audit log.
pub fn sso_refusal_words(code: &str) -> &'static str {
    match code {
        "state" => "That sign-in link expired or was already used. Start again.",
        "provider" => "The identity provider did not sign you in (cancelled or refused).",
        "token" => "The identity provider's answer could not be trusted, so you were not signed in. An admin can see why in the audit log.",
        "no_role" => "You signed in at the identity provider, but none of your groups gives a role in Trellis. Ask an admin to map one of your groups.",
        "disabled" => "Your Trellis account is disabled. An admin can enable it again.",
        "username_taken" => "A local Trellis user already has your name. Ask an admin to link the accounts.",
        "email_unverified" => "Your identity provider has not verified your email, which linking your account needs.",
        "unreachable" => "The identity provider cannot be reached right now. Try again in a moment.",
        _ => "Signing in through the identity provider failed. Try again.",
    }
}
