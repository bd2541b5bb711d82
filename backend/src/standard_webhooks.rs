//! Standard Webhooks secrets and signatures: the secrets webhook triggers and alert rules are
//! given, and the signature alert deliveries carry (`alerts::send`; `triggers::signature`
//! checks incoming ones the same way). It stands on nothing of Trellis's.
//!
//! A secret is `whsec_` and 32 random bytes in base64; a signature is `v1,` and the base64
//! HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with the secret's decoded part.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::Sha256;

pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a new secret (the spec asks for at least 24).
pub const SECRET_BYTES: usize = 32;

/// A new secret in Standard Webhooks form: `whsec_` and 32 random bytes in base64.
pub fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The `webhook-signature` value of an outgoing delivery: `v1,` and the base64 HMAC-SHA256 of
/// `{id}.{timestamp}.{body}` keyed with the secret's decoded part, what a receiver (a webhook
/// trigger included) checks. A secret not in `whsec_` form is used as the key's text.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret.strip_prefix(SECRET_PREFIX).and_then(|b64| STANDARD.decode(b64).ok());
    let mac = content_mac(key.as_deref().unwrap_or(secret.as_bytes()), id, &timestamp.to_string(), body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The HMAC-SHA256, keyed with `key`, of what a signature covers: `{id}.{timestamp}.{body}`
/// (`timestamp` as the header carries it). Signing and checking both start here.
pub fn content_mac(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_standard_webhooks_keys_of_32_random_bytes() {
        let s = new_secret();
        assert_eq!(STANDARD.decode(s.strip_prefix(SECRET_PREFIX).unwrap()).unwrap().len(), SECRET_BYTES);
        assert_ne!(s, new_secret());
    }
}
