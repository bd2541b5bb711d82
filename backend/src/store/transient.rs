//! Database failures that are nobody's fault: a transaction chosen as a deadlock victim or
//! aborted by a serialization conflict (it rolled back whole, so running it again is safe),
//! and a database that is away (restarting, unreachable, out of connections).
//!
//! The store retries the first kind itself ([`retry_transient`]); the HTTP layer answers
//! whatever is left of either kind with 503 and `Retry-After`, never 500.

use super::{Result, StoreError};
use std::future::Future;
use std::time::Duration;

/// Runs of one transaction before a deadlock or serialization failure is given up on.
const TRIES: u32 = 6;

/// What kind of trouble a database error is, if it is not a bug or a client's mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// Deadlock victim, serialization failure, SQLite busy: run the transaction again.
    Retryable,
    /// The database is unreachable, restarting or out of connections.
    Unavailable,
}

/// Classifies a database error by SQLSTATE (Postgres) or result code (SQLite).
pub fn trouble(e: &sqlx::Error) -> Option<Trouble> {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => Some(Trouble::Unavailable),
        sqlx::Error::Database(db) => {
            let code = db.code()?;
            match code.as_ref() {
                // deadlock_detected, serialization_failure; SQLite BUSY, LOCKED, BUSY_SNAPSHOT.
                "40P01" | "40001" | "5" | "6" | "517" => Some(Trouble::Retryable),
                // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections,
                // and the whole connection-exception class.
                "57P01" | "57P02" | "57P03" | "53300" => Some(Trouble::Unavailable),
                c if c.starts_with("08") => Some(Trouble::Unavailable),
                _ => None,
            }
        }
        _ => None,
    }
}

impl StoreError {
    /// The kind of passing trouble this is, if any (see the module docs).
    pub fn trouble(&self) -> Option<Trouble> {
        match self {
            StoreError::Database(e) => trouble(e),
            StoreError::Conflict(_) => None,
        }
    }
}

/// The trouble behind an error that layers above the store (the engine) wrapped in `anyhow`.
pub fn trouble_of(e: &anyhow::Error) -> Option<Trouble> {
    e.chain().find_map(|cause| {
        if let Some(store) = cause.downcast_ref::<StoreError>() {
            store.trouble()
        } else {
            cause.downcast_ref::<sqlx::Error>().and_then(trouble)
        }
    })
}

/// Runs `transaction` again while the database aborts it as a deadlock victim or a
/// serialization conflict, up to [`TRIES`] runs with a short, jittered backoff (so the two
/// sides of a deadlock do not meet again at once). Any other outcome is returned as is.
pub async fn retry_transient<T, F, Fut>(mut transaction: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut backoff = Duration::from_millis(2);
    for run in 1.. {
        match transaction().await {
            Err(e) if run < TRIES && e.trouble() == Some(Trouble::Retryable) => {
                tracing::debug!(error = %e, run, "transaction aborted by the database; running it again");
                let jitter = rand::random::<f64>() + 0.5;
                tokio::time::sleep(backoff.mul_f64(jitter)).await;
                backoff *= 3;
            }
            outcome => return outcome,
        }
    }
    unreachable!("the loop returns by its last run")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn pool_and_connection_failures_mean_the_database_is_away() {
        assert_eq!(trouble(&sqlx::Error::PoolTimedOut), Some(Trouble::Unavailable));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(trouble(&sqlx::Error::Io(refused)), Some(Trouble::Unavailable));
        assert_eq!(trouble(&sqlx::Error::RowNotFound), None);
    }

    #[tokio::test]
    async fn other_errors_are_returned_after_one_run() {
        let runs = AtomicU32::new(0);
        let outcome: Result<()> = retry_transient(|| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Conflict("x".into()))
        })
        .await;
        assert!(matches!(outcome, Err(StoreError::Conflict(_))));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
