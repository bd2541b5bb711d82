//! Access tokens: HS256 JWTs with a pinned algorithm and every registered claim required.
//!
//! Pinning the algorithm in [`Validation`] is what rejects `alg: none` and algorithm
//! confusion; requiring `exp`, `iat`, `sub`, `iss` and `aud` rejects tokens minted for
//! another service or without an expiry.
//!
//! A valid signature only says which session a token belongs to (`sid`): the caller's
//! current name and role come from that session's row (see `store::AccountStore`), so a
//! token stops working when its session or user is gone and never outlives a role change.

use super::{Principal, Role};
use base64::Engine;
use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::Rng;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub const ISSUER: &str = "trellis";
pub const AUDIENCE: &str = "trellis-api";
const ALGORITHM: Algorithm = Algorithm::HS256;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub name: String,
    pub role: Role,
    pub iss: String,
    pub aud: String,
    pub iat: u64,
    pub exp: u64,
    /// The session this token belongs to; without one a token is refused.
    pub sid: Uuid,
}

/// What a valid token claims: whose it is and which session it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSession {
    pub user_id: Uuid,
    pub session_id: Uuid,
}

pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    pub ttl_secs: u64,
}

impl TokenKeys {
    pub fn new(secret: &[u8], ttl_secs: u64) -> Self {
        let mut validation = Validation::new(ALGORITHM);
        validation.set_required_spec_claims(&["exp", "iat", "sub", "iss", "aud"]);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.leeway = 5;
        TokenKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            ttl_secs,
        }
    }

    /// A token for `principal`'s session `sid`, valid from `now` (Unix seconds) for the
    /// configured lifetime.
    pub fn issue(&self, principal: &Principal, sid: Uuid, now: u64) -> String {
        self.issue_for(principal, sid, now, self.ttl_secs)
    }

    /// A token valid for `ttl_secs` (single sign-on sessions may be shorter than the default).
    pub fn issue_for(&self, principal: &Principal, sid: Uuid, now: u64, ttl_secs: u64) -> String {
        let claims = Claims {
            sub: principal.id.clone(),
            name: principal.name.clone(),
            role: principal.role,
            iss: ISSUER.to_owned(),
            aud: AUDIENCE.to_owned(),
            iat: now,
            exp: now + ttl_secs,
            sid,
        };
        encode(&Header::new(ALGORITHM), &claims, &self.encoding).expect("HS256 signing cannot fail")
    }

    /// The session a valid token belongs to, or why it is not valid.
    pub fn verify(&self, token: &str) -> Result<TokenSession, jsonwebtoken::errors::Error> {
        let data = decode::<Claims>(token, &self.decoding, &self.validation)?;
        let user_id = Uuid::parse_str(&data.claims.sub)
            .map_err(|_| jsonwebtoken::errors::Error::from(jsonwebtoken::errors::ErrorKind::InvalidSubject))?;
        Ok(TokenSession { user_id, session_id: data.claims.sid })
    }
}

/// A fresh random signing secret, base64url-encoded.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn keys() -> TokenKeys {
        TokenKeys::new(b"0123456789abcdef0123456789abcdef", 60)
    }

    const ADA: Uuid = Uuid::from_u128(1);
    const SID: Uuid = Uuid::from_u128(2);

    fn ada() -> Principal {
        Principal { id: ADA.to_string(), name: "ada".into(), role: Role::Editor }
    }

    fn now() -> u64 {
        chrono::Utc::now().timestamp() as u64
    }

    #[test]
    fn an_issued_token_verifies_to_its_session() {
        let k = keys();
        assert_eq!(k.verify(&k.issue(&ada(), SID, now())).unwrap(), TokenSession { user_id: ADA, session_id: SID });
    }

    /// Tokens already handed out must keep verifying across jsonwebtoken upgrades and crypto backends: this one
    /// was signed outside Rust (plain HMAC-SHA256 over the test secret) and expires in 2100.
    #[test]
    fn a_token_signed_before_an_upgrade_still_verifies() {
        let token =
            "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIwMDAwMDAwMC0wMDAwLTAwMDAtMDAwMC0wMDAwMDAwMDAwMDEiLCJu\
                     YW1lIjoiYWRhIiwicm9sZSI6ImVkaXRvciIsImlzcyI6InRyZWxsaXMiLCJhdWQiOiJ0cmVsbGlzLWFwaSIsImlhdCI6MTcw\
                     MDAwMDAwMCwiZXhwIjo0MTAyNDQ0ODAwLCJzaWQiOiIwMDAwMDAwMC0wMDAwLTAwMDAtMDAwMC0wMDAwMDAwMDAwMDIifQ.\
                     PLt4jBn7V2YoeYqDLcEgNqO1TPAFf1z2wOr5vm9TRCI";
        assert_eq!(keys().verify(token).unwrap(), TokenSession { user_id: ADA, session_id: SID });
    }

    #[test]
    fn a_token_without_a_session_is_rejected() {
        let k = keys();
        let claims = serde_json::json!({"sub": ADA.to_string(), "name": "ada", "role": "admin", "iss": ISSUER,
                                        "aud": AUDIENCE, "iat": now(), "exp": now() + 60});
        let token =
            encode(&Header::new(ALGORITHM), &claims, &EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef"))
                .unwrap();
        assert!(k.verify(&token).is_err());
    }

    #[test]
    fn expired_tampered_and_foreign_tokens_are_rejected() {
        let k = keys();
        assert!(k.verify(&k.issue(&ada(), SID, now() - 3600)).is_err(), "expired");
        let token = k.issue(&ada(), SID, now());
        let (head, rest) = token.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let admin = serde_json::json!({"sub": "u1", "name": "ada", "role": "admin", "iss": ISSUER, "aud": AUDIENCE,
                                       "iat": now(), "exp": now() + 60});
        let forged = format!("{head}.{}.{sig}", URL_SAFE_NO_PAD.encode(admin.to_string()));
        assert!(k.verify(&forged).is_err(), "tampered payload");
        let other = TokenKeys::new(b"another secret, another server!!", 60);
        assert!(k.verify(&other.issue(&ada(), SID, now())).is_err(), "foreign key");
    }

    #[test]
    fn alg_none_is_rejected() {
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
        let claims = serde_json::json!({"sub": "u1", "name": "ada", "role": "admin", "iss": ISSUER, "aud": AUDIENCE,
                                        "iat": now(), "exp": now() + 60});
        let token = format!("{header}.{}.", URL_SAFE_NO_PAD.encode(claims.to_string()));
        assert!(keys().verify(&token).is_err());
    }
}
