//! Argon2id password hashes, computed off the async threads: a hash takes tens of
//! milliseconds of CPU and would otherwise stall every request sharing the worker.

use anyhow::{anyhow, Result};
use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::sync::LazyLock;

pub const MIN_PASSWORD_LEN: usize = 8;
const MAX_PASSWORD_LEN: usize = 1024;

pub fn check_strength(password: &str) -> Result<(), String> {
    let len = password.chars().count();
    if len < MIN_PASSWORD_LEN {
        return Err(format!("passwords need at least {MIN_PASSWORD_LEN} characters"));
    }
    if len > MAX_PASSWORD_LEN {
        return Err(format!("passwords are at most {MAX_PASSWORD_LEN} characters"));
    }
    Ok(())
}

/// The PHC string of an Argon2id hash of `password` with a fresh salt.
pub async fn hash(password: String) -> Result<String> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| anyhow!("hashing failed: {e}"))
    })
    .await?
}

/// Whether `password` matches `phc`. With `phc = None` (unknown user) it still spends the
/// time of one verification, so response times do not reveal which usernames exist.
pub async fn verify(password: String, phc: Option<String>) -> Result<bool> {
    tokio::task::spawn_blocking(move || {
        let known = phc.is_some();
        let phc = phc.unwrap_or_else(|| DUMMY_HASH.clone());
        let parsed = PasswordHash::new(&phc).map_err(|e| anyhow!("stored hash is unreadable: {e}"))?;
        let matches = Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok();
        Ok(known && matches)
    })
    .await?
}

static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default().hash_password(b"not a real password", &salt).expect("hashing works").to_string()
});

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_only_its_own_password() {
        let phc = hash("correct horse".into()).await.unwrap();
        assert!(phc.starts_with("$argon2id$"));
        assert!(verify("correct horse".into(), Some(phc.clone())).await.unwrap());
        assert!(!verify("wrong horse".into(), Some(phc)).await.unwrap());
        assert!(!verify("not a real password".into(), None).await.unwrap());
    }
}
