//! Access tokens: HS256 JWTs with a pinned algorithm and every registered claim required.
//!
//! Pinning the algorithm in [`Validation`] is what rejects `alg: none` and algorithm
//! confusion; requiring `exp`, `iat`, `sub`, `iss` and `aud` rejects tokens minted for
//! another service or without an expiry.

use super::{Principal, Role};
use base64::Engine;
use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::RngCore;
use serde::{Deserialize, Serialize};

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

    /// A token for `principal`, valid from `now` (Unix seconds) for the configured lifetime.
    pub fn issue(&self, principal: &Principal, now: u64) -> String {
        let claims = Claims {
            sub: principal.id.clone(),
            name: principal.name.clone(),
            role: principal.role,
            iss: ISSUER.to_owned(),
            aud: AUDIENCE.to_owned(),
            iat: now,
            exp: now + self.ttl_secs,
        };
        encode(&Header::new(ALGORITHM), &claims, &self.encoding).expect("HS256 signing cannot fail")
    }

    /// The principal a valid token speaks for, or why it is not valid.
    pub fn verify(&self, token: &str) -> Result<Principal, jsonwebtoken::errors::Error> {
        let data = decode::<Claims>(token, &self.decoding, &self.validation)?;
        Ok(Principal { id: data.claims.sub, name: data.claims.name, role: data.claims.role })
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

    fn ada() -> Principal {
        Principal { id: "u1".into(), name: "ada".into(), role: Role::Editor }
    }

    fn now() -> u64 {
        chrono::Utc::now().timestamp() as u64
    }

    #[test]
    fn an_issued_token_verifies_to_its_principal() {
        let k = keys();
        assert_eq!(k.verify(&k.issue(&ada(), now())).unwrap(), ada());
    }

    #[test]
    fn expired_tampered_and_foreign_tokens_are_rejected() {
        let k = keys();
        assert!(k.verify(&k.issue(&ada(), now() - 3600)).is_err(), "expired");
        let token = k.issue(&ada(), now());
        let (head, rest) = token.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let admin = serde_json::json!({"sub": "u1", "name": "ada", "role": "admin", "iss": ISSUER, "aud": AUDIENCE,
                                       "iat": now(), "exp": now() + 60});
        let forged = format!("{head}.{}.{sig}", URL_SAFE_NO_PAD.encode(admin.to_string()));
        assert!(k.verify(&forged).is_err(), "tampered payload");
        let other = TokenKeys::new(b"another secret, another server!!", 60);
        assert!(k.verify(&other.issue(&ada(), now())).is_err(), "foreign key");
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
