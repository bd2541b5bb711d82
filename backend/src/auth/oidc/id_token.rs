//! Checking the provider's ID token: signature by a key of the provider's JWKS under an
//! allowed asymmetric algorithm, issuer, audience and `azp`, expiry (60 s of skew at most)
//! and the attempt's nonce. jsonwebtoken does the signature and the registered claims; this
//! file decides which key and algorithm may be used and checks what OpenID Connect adds.

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// Asymmetric algorithms only: `none` is no algorithm jsonwebtoken knows, and an HMAC
/// (`HS*`) would be keyed with something public (the classic algorithm confusion).
const ALLOWED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The most clock difference tolerated between the provider and this server.
pub const LEEWAY_SECS: u64 = 60;

/// What the token must say.
pub struct Expected<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    /// The attempt's nonce; `None` where none was sent (the device flow).
    pub nonce: Option<&'a str>,
}

/// Why a token was refused: said in the audit log, never to the browser beyond its code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    #[error("the ID token's algorithm `{0}` is not allowed (only asymmetric signatures are)")]
    Algorithm(String),
    #[error("the ID token is signed by a key the provider does not publish (kid {0:?})")]
    UnknownKey(Option<String>),
    #[error("the ID token is not valid: {0}")]
    Invalid(String),
    #[error("the ID token's nonce does not match this sign-in's")]
    Nonce,
    #[error("the ID token's authorized party `{0}` is not this client")]
    AuthorizedParty(String),
}

/// The token's header algorithm and key id, if the algorithm is allowed.
pub fn header(token: &str) -> Result<(Algorithm, Option<String>), TokenRefusal> {
    let header = decode_header(token).map_err(|e| match e.kind() {
        jsonwebtoken::errors::ErrorKind::Json(_) => TokenRefusal::Algorithm(declared_alg(token)),
        _ => TokenRefusal::Invalid(e.to_string()),
    })?;
    if !ALLOWED.contains(&header.alg) {
        return Err(TokenRefusal::Algorithm(format!("{:?}", header.alg)));
    }
    Ok((header.alg, header.kid))
}

/// The `alg` a token's header names, for the refusal of one jsonwebtoken cannot read (`none`).
fn declared_alg(token: &str) -> String {
    use base64::Engine;
    let head = token.split('.').next().unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(head).unwrap_or_default();
    let json: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    json.get("alg").and_then(Value::as_str).unwrap_or("unreadable").chars().take(20).collect()
}

/// The key of `keys` that may check a token of `alg` named `kid`: by `kid` when the token has
/// one, else the only signing key for the algorithm.
pub fn key_for<'a>(keys: &'a JwkSet, alg: Algorithm, kid: Option<&str>) -> Option<&'a Jwk> {
    let usable = |k: &&Jwk| {
        let for_signing = !matches!(k.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature);
        let same_alg = k.common.key_algorithm.is_none_or(|a| key_alg_is(a, alg));
        for_signing && same_alg && !matches!(k.algorithm, jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_))
    };
    match kid {
        Some(kid) => keys.keys.iter().filter(usable).find(|k| k.common.key_id.as_deref() == Some(kid)),
        None => {
            let mut candidates = keys.keys.iter().filter(usable);
            let first = candidates.next();
            first.filter(|_| candidates.next().is_none())
        }
    }
}

/// A key's `alg` names the algorithm by the same name (`ES256` is `ES256`).
fn key_alg_is(key: KeyAlgorithm, alg: Algorithm) -> bool {
    key.to_string().parse::<Algorithm>().is_ok_and(|a| a == alg)
}

/// The claims of a token whose header passed [`header`], checked with `key`.
pub fn verify(token: &str, alg: Algorithm, key: &Jwk, expected: &Expected<'_>) -> Result<Value, TokenRefusal> {
    let key = DecodingKey::from_jwk(key).map_err(|e| TokenRefusal::Invalid(format!("the provider's key: {e}")))?;
    let mut validation = Validation::new(alg);
    validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
    validation.set_issuer(&[expected.issuer]);
    validation.set_audience(&[expected.client_id]);
    validation.leeway = LEEWAY_SECS;
    let claims = decode::<Value>(token, &key, &validation).map_err(|e| TokenRefusal::Invalid(said(&e)))?.claims;
    check_authorized_party(&claims, expected.client_id)?;
    if let Some(nonce) = expected.nonce {
        if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
            return Err(TokenRefusal::Nonce);
        }
    }
    Ok(claims)
}

/// What jsonwebtoken found wrong, in words for the audit log.
fn said(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::ExpiredSignature => format!("it expired (more than {LEEWAY_SECS} s ago)"),
        ErrorKind::ImmatureSignature => "it is not valid yet".into(),
        ErrorKind::InvalidIssuer => "its issuer is not TRELLIS_OIDC_ISSUER".into(),
        ErrorKind::InvalidAudience => "its audience is not this client (TRELLIS_OIDC_CLIENT_ID)".into(),
        ErrorKind::InvalidSignature => "its signature does not verify".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("it has no `{claim}` claim"),
        _ => e.to_string(),
    }
}

/// `azp`, when present, must be this client; with several audiences it must be present.
fn check_authorized_party(claims: &Value, client_id: &str) -> Result<(), TokenRefusal> {
    let audiences = claims.get("aud").and_then(Value::as_array).map_or(1, Vec::len);
    match claims.get("azp").and_then(Value::as_str) {
        Some(azp) if azp != client_id => Err(TokenRefusal::AuthorizedParty(azp.chars().take(100).collect())),
        None if audiences > 1 => Err(TokenRefusal::AuthorizedParty("(none, with several audiences)".into())),
        _ => Ok(()),
    }
}
