//! Bursts of starts a workflow's `debounce` folds into one instance (`debounces`; statements
//! here, their use in `queries/debounces.rs`). A start of a key with no burst gathering opens
//! one with a new instance id; each further start of the key within the period gives it its
//! input and pushes its `due_at` (never past `first_at + max_wait`), and is answered the same
//! id. Under the workflow's lock, so two processes never open two bursts of one key. When due,
//! a process claims the burst (a lease), starts its instance with that id, then deletes it.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use uuid::Uuid;

/// A start folded into its key's burst.
#[derive(Debug, Clone)]
pub struct NewDebounce {
    /// The id the instance gets if this start opens a burst.
    pub instance_id: Uuid,
    pub workflow_id: Uuid,
    pub key: String,
    pub input: Value,
    pub period_ms: u64,
    /// Counted from the burst's first start (`None`: no bound).
    pub max_wait_ms: Option<u64>,
    /// The workflow's `rate_limit`: every start of a burst is counted (and may be refused).
    pub rate: Option<super::RateCheck>,
    /// Who asked for this start; the burst's instance is the last start's, input and starter.
    pub started_by: Option<String>,
}

/// The burst a start joined: its instance's id and when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Debounced {
    pub instance_id: Uuid,
    pub due_at: DateTime<Utc>,
    /// False when this start opened the burst.
    pub joined: bool,
}

/// A burst as stored: what starting its instance needs, and what the instance view shows.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DebounceRow {
    pub instance_id: Uuid,
    pub workflow_id: Uuid,
    pub key: String,
    pub input: Json<Value>,
    pub starts: i64,
    pub first_at: DateTime<Utc>,
    pub last_at: DateTime<Utc>,
    pub due_at: DateTime<Utc>,
    pub started_by: Option<String>,
}

#[async_trait::async_trait]
pub trait DebounceStore: Send + Sync + 'static {
    /// Folds a start into its key's gathering burst, or opens one; `Err(when)`: the rate
    /// limit refused the start until then, and nothing changed.
    async fn debounce(&self, start: &NewDebounce) -> super::Result<Result<Debounced, DateTime<Utc>>>;
    /// Claims the bursts due at `now` until `lease_until` (another process takes a burst
    /// whose lease ran out): each is to be started, then `finish_debounce`d.
    async fn claim_due_debounces(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> super::Result<Vec<DebounceRow>>;
    /// A burst's instance was started (or can never be): forgets the burst.
    async fn finish_debounce(&self, instance_id: Uuid) -> super::Result<()>;
    /// The burst whose instance will have this id, while it gathers or starts.
    async fn pending_debounce(&self, instance_id: Uuid) -> super::Result<Option<DebounceRow>>;
    /// When the next burst is due (`None`: none is gathering).
    async fn next_debounce_due(&self) -> super::Result<Option<DateTime<Utc>>>;
}

pub(super) const DEBOUNCE_COLUMNS: &str =
    "instance_id, workflow_id, key, input, starts, first_at, last_at, due_at, started_by";
pub(super) const GATHERING: &str =
    "SELECT instance_id, first_at FROM debounces WHERE workflow_id = $1 AND key = $2 AND claimed_until IS NULL";
/// Joins a burst unless a process claimed it since it was read (it is being started with the
/// input it had then): no row changed means the start opens a burst of its own.
pub(super) const JOIN_BURST: &str = "UPDATE debounces SET input = $2, last_at = $3, due_at = $4, starts = starts + 1, \
     started_by = $5 WHERE instance_id = $1 AND claimed_until IS NULL";
pub(super) const OPEN_BURST: &str = "INSERT INTO debounces (instance_id, workflow_id, key, input, starts, first_at, \
     last_at, due_at, started_by) VALUES ($1, $2, $3, $4, 1, $5, $5, $6, $7)";
/// Claims up to 100 due bursts, the earliest first (the outer condition is checked again on
/// the row a concurrent claim may have changed, so two processes never both claim one).
pub(super) const CLAIM_DUE: &str = const_format::concatcp!(
    "UPDATE debounces SET claimed_until = $2 WHERE due_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1) \
     AND instance_id IN (SELECT instance_id FROM debounces WHERE due_at <= $1 AND (claimed_until IS NULL OR \
     claimed_until < $1) ORDER BY due_at LIMIT 100) RETURNING ",
    DEBOUNCE_COLUMNS
);
pub(super) const FORGET: &str = "DELETE FROM debounces WHERE instance_id = $1";
pub(super) const PENDING: &str =
    const_format::concatcp!("SELECT ", DEBOUNCE_COLUMNS, " FROM debounces WHERE instance_id = $1");
pub(super) const NEXT_DUE: &str = "SELECT MIN(due_at) FROM debounces WHERE claimed_until IS NULL";

/// When a burst that began at `first` and last had a start at `now` is due.
pub fn due_at(first: DateTime<Utc>, now: DateTime<Utc>, period_ms: u64, max_wait_ms: Option<u64>) -> DateTime<Utc> {
    let ms = |n: u64| chrono::Duration::milliseconds(n.min(i64::MAX as u64 / 2) as i64);
    let after_last = now + ms(period_ms);
    match max_wait_ms {
        Some(max) => after_last.min(first + ms(max)),
        None => after_last,
    }
}

#[cfg(test)]
mod tests {
    use super::due_at;
    use chrono::{Duration, Utc};

    #[test]
    fn a_burst_is_due_a_period_after_its_last_start_but_no_later_than_max_wait() {
        let first = Utc::now();
        assert_eq!(due_at(first, first, 500, None), first + Duration::milliseconds(500));
        let later = first + Duration::milliseconds(800);
        assert_eq!(due_at(first, later, 500, None), later + Duration::milliseconds(500));
        assert_eq!(due_at(first, later, 500, Some(1000)), first + Duration::milliseconds(1000));
    }
}
