//! Single sign-on through an OpenID Connect provider.
//!
//! A browser sign-in: `begin` records an attempt (state, nonce, PKCE verifier, where to
//! return) and sends the browser to the provider; the callback `finish`es it: takes the
//! attempt (once), trades the code for tokens, checks the ID token (`id_token.rs`), merges
//! userinfo, and `admit.rs` turns the identity into a Trellis user with the role the group
//! mapping (`mapping.rs`) gives. The command line signs in through the device authorization
//! grant, the server talking to the provider on its behalf, or, where the provider has no
//! device flow, through the browser with the result handed to a loopback port (`loopback.rs`).

pub mod admit;
pub mod id_token;
pub mod loopback;
pub mod mapping;
pub mod provider;
pub mod settings;

use crate::store::{DynStore, OidcAttempt};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use id_token::Expected;
use loopback::LoopbackReturn;
use provider::{Provider, ProviderError, Tokens};
use rand::Rng;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use admit::{Admitted, Identity};
pub use settings::OidcSettings;

/// How long a browser may spend at the provider's sign-in form.
const ATTEMPT_SECS: i64 = 600;
/// The longest `return_to` kept.
const MAX_RETURN_TO: usize = 1024;
/// Codes longer than this are not sent to the provider.
const MAX_CODE_LEN: usize = 2048;

/// Why a sign-in through the provider was refused: `code` goes to the sign-in page
/// (`/login?error=CODE`), `reason` to the audit log and the server's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: RefusalCode,
    pub reason: String,
}

/// What the sign-in page can say about a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalCode {
    /// No attempt matches (missing, replayed, expired, or from another browser).
    State,
    /// The provider said no (the person cancelled, or it refused the request).
    Provider,
    /// The code or the ID token did not check out.
    Token,
    /// None of the user's groups is mapped to a role and there is no default.
    NoRole,
    Disabled,
    /// A local user has the name and linking is off.
    UsernameTaken,
    /// Linking needs the provider to say the email is verified.
    EmailUnverified,
    Unreachable,
}

impl RefusalCode {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::State => "state",
            RefusalCode::Provider => "provider",
            RefusalCode::Token => "token",
            RefusalCode::NoRole => "no_role",
            RefusalCode::Disabled => "disabled",
            RefusalCode::UsernameTaken => "username_taken",
            RefusalCode::EmailUnverified => "email_unverified",
            RefusalCode::Unreachable => "unreachable",
        }
    }
}

impl Refused {
    pub fn new(code: RefusalCode, reason: impl Into<String>) -> Refused {
        Refused { code, reason: reason.into() }
    }
}

impl From<ProviderError> for Refused {
    fn from(e: ProviderError) -> Self {
        let code = match e {
            ProviderError::Unreachable(_) => RefusalCode::Unreachable,
            ProviderError::Refused(_) => RefusalCode::Token,
        };
        Refused::new(code, e.to_string())
    }
}

pub struct Oidc {
    pub provider: Provider,
}

impl Oidc {
    pub fn new(settings: OidcSettings) -> anyhow::Result<Oidc> {
        Ok(Oidc { provider: Provider::new(settings)? })
    }

    pub fn settings(&self) -> &OidcSettings {
        &self.provider.settings
    }

    /// Records an attempt and answers where the browser goes, and the attempt's `state` (which
    /// the browser also keeps in a cookie, so the callback is this browser's).
    pub async fn begin(
        &self,
        store: &DynStore,
        return_to: &str,
        cli: Option<&LoopbackReturn>,
        now: DateTime<Utc>,
    ) -> Result<(String, String), Refused> {
        let verifier = random_text();
        let attempt = OidcAttempt {
            state: random_text(),
            nonce: random_text(),
            pkce_verifier: verifier.clone(),
            return_to: return_to.to_owned(),
            expires_at: now + chrono::Duration::seconds(ATTEMPT_SECS),
            cli_port: cli.map(|c| i32::from(c.port)),
            cli_challenge: cli.map(|c| c.challenge.clone()),
        };
        let url = self.provider.authorize_url(&attempt.state, &attempt.nonce, &challenge_of(&verifier)).await?;
        store
            .insert_oidc_attempt(&attempt, now)
            .await
            .map_err(|e| Refused::new(RefusalCode::Unreachable, e.to_string()))?;
        Ok((url, attempt.state))
    }

    /// The identity an authorization code vouches for, with the attempt it answers.
    pub async fn finish(&self, attempt: &OidcAttempt, code: &str) -> Result<Identity, Refused> {
        if code.is_empty() || code.len() > MAX_CODE_LEN {
            return Err(Refused::new(
                RefusalCode::Token,
                format!("the callback's code is empty or longer than {MAX_CODE_LEN} bytes"),
            ));
        }
        let tokens = self.provider.exchange_code(code, &attempt.pkce_verifier).await?;
        self.identity(tokens, Some(&attempt.nonce)).await
    }

    /// Checks the ID token of `tokens` (with `nonce` where one was sent) and merges userinfo.
    pub async fn identity(&self, tokens: Tokens, nonce: Option<&str>) -> Result<Identity, Refused> {
        let refused = |e: id_token::TokenRefusal| Refused::new(RefusalCode::Token, e.to_string());
        let id_token =
            tokens.id_token.ok_or_else(|| Refused::new(RefusalCode::Token, "the provider sent no ID token"))?;
        let (alg, kid) = id_token::header(&id_token).map_err(refused)?;
        let key = self
            .provider
            .key_for(alg, kid.as_deref())
            .await?
            .ok_or_else(|| refused(id_token::TokenRefusal::UnknownKey(kid.clone())))?;
        let settings = self.settings();
        let expected = Expected { issuer: &settings.issuer, client_id: &settings.client_id, nonce };
        let mut claims = id_token::verify(&id_token, alg, &key, &expected).map_err(refused)?;
        if let Some(access_token) = tokens.access_token.as_deref() {
            match self.provider.userinfo(access_token).await {
                Ok(Some(info)) => merge_userinfo(&mut claims, info),
                Ok(None) => {}
                // The ID token is enough to sign in: a userinfo hiccup only loses what it adds.
                Err(e) => tracing::warn!(error = %e, "single sign-on: userinfo failed; using the ID token's claims"),
            }
        }
        Identity::from_claims(claims, &settings.groups_claim, id_token)
    }
}

/// Adds userinfo's claims the ID token lacks, only when userinfo is about the same `sub`
/// (OpenID Connect Core §5.3.2: otherwise it must not be used).
fn merge_userinfo(claims: &mut Value, info: Value) {
    if info.get("sub").is_none() || info.get("sub") != claims.get("sub") {
        tracing::warn!("single sign-on: userinfo is about another subject; ignored");
        return;
    }
    let (Some(claims), Value::Object(info)) = (claims.as_object_mut(), info) else { return };
    for (key, value) in info {
        claims.entry(key).or_insert(value);
    }
}

/// 32 random bytes, base64url: states, nonces and PKCE verifiers (43 characters, within
/// RFC 7636's 43–128).
pub fn random_text() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// PKCE S256: base64url(SHA-256(verifier)).
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `return_to` as the browser may be sent there: a path on this server, never another origin
/// (`//host`, `/\host` and schemes are refused), without control characters.
pub fn checked_return_to(return_to: Option<&str>) -> Result<String, String> {
    let Some(path) = return_to.filter(|p| !p.is_empty()) else { return Ok("/".into()) };
    let same_origin_path = path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && !path.chars().any(|c| c.is_control() || c == '\\');
    if !same_origin_path || path.len() > MAX_RETURN_TO {
        return Err(format!(
            "`return_to` must be a path on this server such as `/instances` (at most {MAX_RETURN_TO} bytes), not another address"
        ));
    }
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_to_is_only_ever_a_same_origin_path() {
        assert_eq!(checked_return_to(None).unwrap(), "/");
        assert_eq!(checked_return_to(Some("/instances?status=failed")).unwrap(), "/instances?status=failed");
        for evil in
            ["//evil.example", "https://evil.example", "/\\evil.example", "evil", "/a\nb", "javascript:alert(1)"]
        {
            assert!(checked_return_to(Some(evil)).is_err(), "{evil}");
        }
    }

    #[test]
    fn the_pkce_challenge_is_rfc_7636s_example() {
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn userinfo_adds_only_for_the_same_subject_and_never_overrides() {
        let mut claims = serde_json::json!({"sub": "a", "email": "a@x"});
        merge_userinfo(&mut claims, serde_json::json!({"sub": "a", "email": "other@x", "groups": ["ops"]}));
        assert_eq!(claims, serde_json::json!({"sub": "a", "email": "a@x", "groups": ["ops"]}));
        merge_userinfo(&mut claims, serde_json::json!({"sub": "b", "name": "mallory"}));
        assert!(claims.get("name").is_none());
    }
}
