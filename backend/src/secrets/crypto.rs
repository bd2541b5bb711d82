//! Envelope encryption of secret values (as in Vault's transit engine and age): each value is
//! sealed with XChaCha20-Poly1305 under its own random 256-bit data key, and the data key is
//! sealed (wrapped) under the master key. Both seals bind the secret's name as associated data,
//! so a row copied under another name, or a data key moved to another row, does not open.
//! Rotating the master key re-wraps data keys only; values are never re-encrypted for it.
//!
//! A sealed blob is `version (1 byte) || nonce (24 bytes) || ciphertext || tag (16 bytes)`.
//! XChaCha20's 192-bit nonces are safe to draw at random for every seal.

use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{KeyInit, XChaCha20Poly1305, XNonce};
use rand::Rng;
use zeroize::Zeroizing;

pub const KEY_BYTES: usize = 32;
const NONCE_BYTES: usize = 24;
/// The format of a sealed blob, so a later one can be told apart.
const FORMAT: u8 = 1;
/// Associated data prefixes, one per use, so a seal made for one use opens for no other.
const VALUE_AD: &str = "trellis/secret-value/v1:";
const WRAP_AD: &str = "trellis/secret-data-key/v1:";
const CHECK_AD: &[u8] = b"trellis/master-key-check/v1";
/// What the key check value seals: a master key that opens it is the database's key.
const CHECK_TEXT: &[u8] = b"trellis master key check";

/// A 256-bit key, wiped from memory when dropped.
pub struct Key(Zeroizing<[u8; KEY_BYTES]>);

impl Key {
    pub fn random() -> Key {
        let mut bytes = Zeroizing::new([0u8; KEY_BYTES]);
        rand::rng().fill_bytes(&mut bytes[..]);
        Key(bytes)
    }

    /// `None` unless `bytes` is exactly 32 bytes long.
    pub fn from_slice(bytes: &[u8]) -> Option<Key> {
        let mut key = Zeroizing::new([0u8; KEY_BYTES]);
        if bytes.len() != KEY_BYTES {
            return None;
        }
        key.copy_from_slice(bytes);
        Some(Key(key))
    }

    pub fn bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new_from_slice(self.0.as_slice()).expect("a 32-byte key")
    }
}

/// A sealed blob did not open: the wrong key, another name, or altered bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unopened;

fn seal(key: &Key, plaintext: &[u8], ad: &[u8]) -> Vec<u8> {
    let mut nonce = [0u8; NONCE_BYTES];
    rand::rng().fill_bytes(&mut nonce);
    let sealed = key
        .cipher()
        .encrypt(&XNonce::from(nonce), Payload { msg: plaintext, aad: ad })
        .expect("XChaCha20-Poly1305 seals any message under 256 GiB");
    let mut blob = Vec::with_capacity(1 + NONCE_BYTES + sealed.len());
    blob.push(FORMAT);
    blob.extend_from_slice(&nonce);
    blob.extend_from_slice(&sealed);
    blob
}

fn open(key: &Key, blob: &[u8], ad: &[u8]) -> Result<Zeroizing<Vec<u8>>, Unopened> {
    let (&format, rest) = blob.split_first().ok_or(Unopened)?;
    if format != FORMAT || rest.len() < NONCE_BYTES {
        return Err(Unopened);
    }
    let (nonce, sealed) = rest.split_at(NONCE_BYTES);
    let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| Unopened)?;
    key.cipher()
        .decrypt(&XNonce::from(nonce), Payload { msg: sealed, aad: ad })
        .map(Zeroizing::new)
        .map_err(|_| Unopened)
}

fn bound(prefix: &str, name: &str) -> Vec<u8> {
    [prefix.as_bytes(), name.as_bytes()].concat()
}

/// A secret as stored: its value sealed under a fresh data key, that key wrapped by `master`.
pub struct Sealed {
    pub ciphertext: Vec<u8>,
    pub wrapped_key: Vec<u8>,
}

pub fn seal_value(master: &Key, name: &str, value: &[u8]) -> Sealed {
    let data_key = Key::random();
    Sealed {
        ciphertext: seal(&data_key, value, &bound(VALUE_AD, name)),
        wrapped_key: seal(master, data_key.bytes(), &bound(WRAP_AD, name)),
    }
}

pub fn open_value(master: &Key, name: &str, sealed: &Sealed) -> Result<Zeroizing<Vec<u8>>, Unopened> {
    let data_key = unwrap_key(master, name, &sealed.wrapped_key)?;
    open(&data_key, &sealed.ciphertext, &bound(VALUE_AD, name))
}

fn unwrap_key(master: &Key, name: &str, wrapped: &[u8]) -> Result<Key, Unopened> {
    let bytes = open(master, wrapped, &bound(WRAP_AD, name))?;
    Key::from_slice(&bytes).ok_or(Unopened)
}

/// The data key of `name` wrapped by `new` instead of `old` (master-key rotation).
pub fn rewrap(old: &Key, new: &Key, name: &str, wrapped: &[u8]) -> Result<Vec<u8>, Unopened> {
    let data_key = unwrap_key(old, name, wrapped)?;
    Ok(seal(new, data_key.bytes(), &bound(WRAP_AD, name)))
}

/// The key check value: a known text sealed under the master key, kept in the database so a
/// wrong key is refused at start rather than found out as values that do not open.
pub fn check_value(master: &Key) -> Vec<u8> {
    seal(master, CHECK_TEXT, CHECK_AD)
}

pub fn opens_check(master: &Key, check: &[u8]) -> bool {
    open(master, check, CHECK_AD).is_ok_and(|text| text.as_slice() == CHECK_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_opens_only_under_its_own_name_and_master_key() {
        let master = Key::random();
        let sealed = seal_value(&master, "TOKEN", b"s3cr3t");
        assert_eq!(open_value(&master, "TOKEN", &sealed).unwrap().as_slice(), b"s3cr3t");
        assert_eq!(open_value(&master, "OTHER", &sealed).unwrap_err(), Unopened);
        assert_eq!(open_value(&Key::random(), "TOKEN", &sealed).unwrap_err(), Unopened);
        assert!(!sealed.ciphertext.windows(6).any(|w| w == b"s3cr3t"));
        let mut altered = Sealed { ciphertext: sealed.ciphertext.clone(), wrapped_key: sealed.wrapped_key.clone() };
        *altered.ciphertext.last_mut().unwrap() ^= 1;
        assert_eq!(open_value(&master, "TOKEN", &altered).unwrap_err(), Unopened);
    }

    #[test]
    fn a_data_key_moved_to_another_name_does_not_open() {
        let master = Key::random();
        let a = seal_value(&master, "A", b"one");
        let b = seal_value(&master, "B", b"two");
        let swapped = Sealed { ciphertext: b.ciphertext, wrapped_key: a.wrapped_key };
        assert_eq!(open_value(&master, "B", &swapped).unwrap_err(), Unopened);
    }

    #[test]
    fn rewrapping_moves_a_secret_to_the_new_master_key() {
        let (old, new) = (Key::random(), Key::random());
        let sealed = seal_value(&old, "TOKEN", b"value");
        let moved = Sealed {
            ciphertext: sealed.ciphertext,
            wrapped_key: rewrap(&old, &new, "TOKEN", &sealed.wrapped_key).unwrap(),
        };
        assert_eq!(open_value(&new, "TOKEN", &moved).unwrap().as_slice(), b"value");
        assert!(open_value(&old, "TOKEN", &moved).is_err());
        assert!(rewrap(&new, &old, "OTHER", &moved.wrapped_key).is_err());
    }

    #[test]
    fn the_check_value_tells_the_right_master_key_from_a_wrong_one() {
        let master = Key::random();
        let check = check_value(&master);
        assert!(opens_check(&master, &check));
        assert!(!opens_check(&Key::random(), &check));
        assert!(!opens_check(&master, b""));
    }
}
