//! Argon2id password hashes, computed off the async threads: a hash takes tens of
//! milliseconds of CPU and would otherwise stall every request sharing the worker.
//!
//! Each hash also holds about 19 MiB while it runs, so only as many run at once as there
//! are cores (`HASHING`); the rest wait their turn for at most `MAX_WAIT`, then give up
//! with [`HashError::Busy`] (a 503 to sign-in). A burst of sign-ins thus costs bounded
//! memory instead of 19 MiB each.

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::Argon2;
use std::sync::LazyLock;
use std::time::Duration;
use tokio::sync::Semaphore;

/// How long a hash waits for its turn before the caller is told to come back.
pub const MAX_WAIT: Duration = Duration::from_secs(2);

/// Hashes running at once, process-wide: one per core (the memory they hold is per process).
static HASHING: LazyLock<Semaphore> =
    LazyLock::new(|| Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 16)));

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("too many password checks are running; try again in a moment")]
    Busy,
    #[error("hashing failed: {0}")]
    Failed(String),
}

type Result<T, E = HashError> = std::result::Result<T, E>;

pub const MIN_PASSWORD_LEN: usize = 8;
pub const MAX_PASSWORD_LEN: usize = 1024;

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
    let turn = turn().await?;
    run(turn, move || {
        Argon2::default()
            .hash_password(password.as_bytes())
            .map(|h| h.to_string())
            .map_err(|e| HashError::Failed(e.to_string()))
    })
    .await
}

/// Whether `password` matches `phc`. With `phc = None` (unknown user) it still spends the
/// time of one verification, so response times do not reveal which usernames exist.
pub async fn verify(turn: Turn, password: String, phc: Option<String>) -> Result<bool> {
    run(turn, move || {
        let known = phc.is_some();
        let phc = phc.unwrap_or_else(|| DUMMY_HASH.clone());
        let parsed =
            PasswordHash::new(&phc).map_err(|e| HashError::Failed(format!("stored hash is unreadable: {e}")))?;
        let matches = Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok();
        Ok(known && matches)
    })
    .await
}

/// A hashing slot, held until the hash it is given to finishes.
pub struct Turn {
    _permit: tokio::sync::SemaphorePermit<'static>,
}

/// Waits (at most `MAX_WAIT`) for a hashing slot.
pub async fn turn() -> Result<Turn> {
    match tokio::time::timeout(MAX_WAIT, HASHING.acquire()).await {
        Ok(Ok(permit)) => Ok(Turn { _permit: permit }),
        _ => Err(HashError::Busy),
    }
}

/// Runs `work` on the blocking pool, holding `turn` until it is done (even if the caller
/// stops waiting: the thread still runs, and still holds its memory).
async fn run<T: Send + 'static>(turn: Turn, work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(move || {
        let _turn = turn;
        work()
    })
    .await
    .map_err(|e| HashError::Failed(e.to_string()))?
}

static DUMMY_HASH: LazyLock<String> =
    LazyLock::new(|| Argon2::default().hash_password(b"not a real password").expect("hashing works").to_string());

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn no_more_hashes_run_at_once_than_there_are_permits() {
        let permits = HASHING.available_permits();
        let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..permits * 3)
            .map(|_| {
                let (running, most) = (running.clone(), most.clone());
                tokio::spawn(async move {
                    let turn = turn().await?;
                    run(turn, move || {
                        use std::sync::atomic::Ordering::SeqCst;
                        let now = running.fetch_add(1, SeqCst) + 1;
                        most.fetch_max(now, SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        running.fetch_sub(1, SeqCst);
                        Ok(())
                    })
                    .await
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert!(most.load(std::sync::atomic::Ordering::SeqCst) <= permits);
    }

    #[tokio::test]
    async fn a_hash_verifies_only_its_own_password() {
        let phc = hash("correct horse".into()).await.unwrap();
        assert!(phc.starts_with("$argon2id$"));
        assert!(verify(turn().await.unwrap(), "correct horse".into(), Some(phc.clone())).await.unwrap());
        assert!(!verify(turn().await.unwrap(), "wrong horse".into(), Some(phc)).await.unwrap());
        assert!(!verify(turn().await.unwrap(), "not a real password".into(), None).await.unwrap());
    }

    /// Hashes already stored in users' databases must keep verifying across argon2 upgrades: this PHC string
    /// (Argon2id v19, the format Trellis has always written) is the reference implementation's test vector.
    #[tokio::test]
    async fn a_stored_argon2id_v19_phc_string_still_verifies() {
        let stored = "$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4";
        assert!(verify(turn().await.unwrap(), "password".into(), Some(stored.into())).await.unwrap());
        assert!(!verify(turn().await.unwrap(), "passwort".into(), Some(stored.into())).await.unwrap());
    }
}
