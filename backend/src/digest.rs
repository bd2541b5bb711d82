//! SHA-256, the one digest Trellis uses to name or compare things without keeping them: API
//! keys at rest, start requests under an Idempotency-Key, webhook bodies for replay checks,
//! sign-in throttle keys and the metrics token.

use sha2::{Digest, Sha256};

pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The digest as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}

/// Bytes as lowercase hex digits (for digests computed in steps, e.g. over a table's rows).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hex_form_is_the_standard_one() {
        assert_eq!(super::sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
