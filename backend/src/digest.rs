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

/// Lowercase or uppercase hex digits as bytes; `None` for an odd length or a non-hex digit.
pub fn unhex(digits: &str) -> Option<Vec<u8>> {
    if !digits.len().is_multiple_of(2) || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_digits_come_back_as_their_bytes() {
        assert_eq!(super::unhex(&super::hex(&[0, 1, 0xab, 0xff])), Some(vec![0, 1, 0xab, 0xff]));
        assert_eq!(super::unhex("ABcd"), Some(vec![0xab, 0xcd]));
        assert_eq!(super::unhex("abc"), None);
        assert_eq!(super::unhex("zz"), None);
        assert_eq!(super::unhex("+f"), None, "from_str_radix alone would take a sign");
    }

    #[test]
    fn the_hex_form_is_the_standard_one() {
        assert_eq!(super::sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
