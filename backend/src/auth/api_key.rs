//! API keys: random, prefixed so they are recognisable in logs and secret scanners, and
//! stored only as a SHA-256 hash. A fast hash is right here (unlike passwords): the key
//! has 256 bits of entropy, so there is nothing to brute-force.

use base64::Engine;
use rand::Rng;

pub const PREFIX: &str = "trk_";

/// A new key: the full secret to show once, and its hash to store.
pub struct NewKey {
    pub secret: String,
    pub hash: String,
    /// The first characters, enough to tell keys apart in a list.
    pub display_prefix: String,
}

pub fn generate() -> NewKey {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let secret = format!("{PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes));
    NewKey { hash: hash(&secret), display_prefix: secret[..PREFIX.len() + 6].to_owned(), secret }
}

pub fn hash(secret: &str) -> String {
    crate::digest::sha256_hex(secret.as_bytes())
}

pub fn looks_like_key(token: &str) -> bool {
    token.starts_with(PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_prefixed_and_hash_consistently() {
        let a = generate();
        let b = generate();
        assert_ne!(a.secret, b.secret);
        assert!(looks_like_key(&a.secret) && a.secret.len() > 40);
        assert_eq!(hash(&a.secret), a.hash);
        assert!(a.secret.starts_with(&a.display_prefix));
    }
}
