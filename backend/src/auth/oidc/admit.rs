//! From an identity the provider vouches for to a Trellis user: found by the provider's
//! `subject`, made at the first sign-in, or (when an admin allows it) linked to the local user
//! whose name is the verified email; the role re-derived from the groups at every sign-in.

use super::mapping::{groups_at, RoleMap};
use super::{RefusalCode, Refused};
use crate::auth::{check_username, Principal};
use crate::store::{DynStore, NewUser, SsoProfile, UserRecord};
use serde_json::Value;
use sha2::{Digest, Sha256};
use trellis_model::{Role, UserSource};

/// Who the provider says signed in.
#[derive(Debug, Clone)]
pub struct Identity {
    pub subject: String,
    pub preferred_username: Option<String>,
    pub email: Option<String>,
    pub email_verified: bool,
    pub groups: Vec<String>,
    /// Kept with the session for the end-session request's `id_token_hint`.
    pub id_token: String,
}

impl Identity {
    pub fn from_claims(claims: Value, groups_claim: &str, id_token: String) -> Result<Identity, Refused> {
        let text = |key: &str| claims.get(key).and_then(Value::as_str).map(str::to_owned);
        let subject = text("sub")
            .filter(|s| !s.is_empty() && s.len() <= 255)
            .ok_or_else(|| Refused::new(RefusalCode::Token, "the ID token has no usable `sub`"))?;
        // Some providers send `"true"` as a string.
        let email_verified = matches!(claims.get("email_verified"), Some(Value::Bool(true)))
            || claims.get("email_verified").and_then(Value::as_str) == Some("true");
        Ok(Identity {
            subject,
            preferred_username: text("preferred_username"),
            email: text("email"),
            email_verified,
            groups: groups_at(&claims, groups_claim).into_iter().take(1000).collect(),
            id_token,
        })
    }

    /// The name a new user gets: the provider's username, else the email, else one made
    /// from the subject; each only if it is a valid Trellis username.
    fn username(&self) -> String {
        [self.preferred_username.as_deref(), self.email.as_deref()]
            .into_iter()
            .flatten()
            .find(|name| check_username(name).is_ok())
            .map_or_else(|| format!("sso-{}", self.subject_digest()), str::to_owned)
    }

    fn subject_digest(&self) -> String {
        Sha256::digest(self.subject.as_bytes()).iter().take(6).map(|b| format!("{b:02x}")).collect()
    }
}

/// A sign-in the mapping allowed.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub principal: Principal,
    pub user: UserRecord,
    /// The role before this sign-in, when the mapping changed it.
    pub role_was: Option<Role>,
    /// The mapping rule that gave the role.
    pub rule: String,
    /// A local user became this SSO user at this sign-in.
    pub linked: bool,
}

pub struct AdmitRules<'a> {
    pub roles: &'a RoleMap,
    pub link_local_users: bool,
}

/// The user `identity` signs in as, with the role its groups give now; or why not.
pub async fn admit(store: &DynStore, rules: &AdmitRules<'_>, identity: &Identity) -> Result<Admitted, Refused> {
    let decision = rules.roles.decide(&identity.groups);
    let (Some(role), Some(rule)) = (decision.role, decision.rule) else {
        return Err(Refused::new(RefusalCode::NoRole, decision.explanation));
    };
    let profile = SsoProfile { subject: &identity.subject, role, groups: &identity.groups };
    let (existing, linked) = match store.user_by_subject(&identity.subject).await.map_err(database_refusal)? {
        Some(user) => (Some(user), false),
        None => {
            let local = linkable(store, rules, identity).await?;
            let linked = local.is_some();
            (local, linked)
        }
    };
    let (user, role_was) = match existing {
        Some(user) => {
            if user.disabled_at.is_some() {
                return Err(Refused::new(RefusalCode::Disabled, format!("`{}` is disabled in Trellis", user.username)));
            }
            store.record_sso_profile(user.id, &profile).await.map_err(database_refusal)?;
            let role_was = (user.role != role).then_some(user.role);
            (user, role_was)
        }
        None => (create(store, identity, &profile).await?, None),
    };
    let user = UserRecord {
        role,
        source: UserSource::Oidc,
        subject: Some(identity.subject.clone()),
        groups: sqlx::types::Json(identity.groups.clone()),
        ..user
    };
    let principal = Principal { id: user.id.to_string(), name: user.username.clone(), role };
    Ok(Admitted { principal, user, role_was, rule, linked })
}

/// The local user this identity may take over, when an admin allows linking and the
/// provider verified the email that is the user's name; a refusal when the name is taken
/// otherwise; `None` when no user has the name.
async fn linkable(
    store: &DynStore,
    rules: &AdmitRules<'_>,
    identity: &Identity,
) -> Result<Option<UserRecord>, Refused> {
    let name = identity.username();
    let Some(local) = store.user_by_name(&name).await.map_err(database_refusal)? else { return Ok(None) };
    if local.source == UserSource::Oidc {
        // Another SSO user has the name: this one gets a name of its own (see `create`).
        return Ok(None);
    }
    let is_email = identity.email.as_deref() == Some(name.as_str());
    if !rules.link_local_users || !is_email {
        return Err(Refused::new(
            RefusalCode::UsernameTaken,
            format!("a local user is named `{name}`; an admin may allow linking (TRELLIS_OIDC_LINK_LOCAL_USERS) or rename them"),
        ));
    }
    if !identity.email_verified {
        return Err(Refused::new(
            RefusalCode::EmailUnverified,
            format!("linking to the local user `{name}` needs the provider to say the email is verified"),
        ));
    }
    Ok(Some(local))
}

/// A new `oidc` user; if another SSO user has the name, the name gets the subject's digest.
async fn create(store: &DynStore, identity: &Identity, profile: &SsoProfile<'_>) -> Result<UserRecord, Refused> {
    let base = identity.username();
    let suffixed = format!("{}-{}", base.chars().take(40).collect::<String>(), identity.subject_digest());
    for name in [base, suffixed] {
        let new = NewUser::new(&name, String::new(), profile.role);
        if store.insert_sso_user(&new, profile).await.map_err(database_refusal)? {
            return Ok(UserRecord {
                id: new.id,
                username: new.username,
                password_hash: String::new(),
                role: profile.role,
                created_at: new.created_at,
                disabled_at: None,
                source: UserSource::Oidc,
                subject: Some(identity.subject.clone()),
                groups: sqlx::types::Json(identity.groups.clone()),
            });
        }
    }
    Err(Refused::new(RefusalCode::UsernameTaken, format!("no free username for subject `{}`", identity.subject)))
}

/// A database error during a sign-in refuses it (nothing half-written: each write is one
/// transaction) and says the database was the trouble.
fn database_refusal(e: crate::store::StoreError) -> Refused {
    Refused::new(RefusalCode::Unreachable, format!("the database: {e}"))
}
