//! The cluster (`crate::cluster`): the processes serving the database, whether it is held, and
//! the scheduled backups' runs. The trait and SQL text here, the bodies in `queries/cluster.rs`.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A `processes` row: one `trellis serve` and its last heartbeat.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ProcessRow {
    pub id: String,
    pub version: String,
    pub schema_known: i64,
    pub host: String,
    pub pid: i64,
    pub listen: String,
    pub started_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub draining: bool,
}

/// The `cluster_state` row.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct HoldRow {
    pub held: bool,
    pub held_reason: Option<String>,
    pub held_since: Option<DateTime<Utc>>,
    pub resumed_at: Option<DateTime<Utc>>,
    pub resumed_by: Option<String>,
    /// The oldest schema a process's release may know and run here (`cluster::compat`).
    pub compatible_from: i64,
}

/// A `backup_runs` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct BackupRunRow {
    pub id: Uuid,
    pub slot: i64,
    pub process_id: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub outcome: String,
    pub file: Option<String>,
    pub bytes: Option<i64>,
    pub error: Option<String>,
}

/// How a scheduled backup ended.
#[derive(Debug, Clone, PartialEq)]
pub enum BackupEnd {
    Succeeded { file: String, bytes: i64 },
    Failed { error: String },
}

#[async_trait]
pub trait ClusterStore: Send + Sync + 'static {
    /// Writes (or rewrites) this process's row.
    async fn register_process(&self, process: &ProcessRow) -> Result<()>;
    /// Stamps this process's heartbeat (and whether it drains); false when its row is gone
    /// (pruned after a long pause, or the database was restored under it).
    async fn heartbeat(&self, id: &str, now: DateTime<Utc>, draining: bool) -> Result<bool>;
    /// Removes a process's row (it stopped).
    async fn remove_process(&self, id: &str) -> Result<()>;
    /// Removes every row not seen since `before` (processes killed long ago); how many.
    async fn prune_processes(&self, before: DateTime<Utc>) -> Result<u64>;
    /// Processes seen since `since`, most recently seen first.
    async fn processes(&self, since: DateTime<Utc>) -> Result<Vec<ProcessRow>>;
    /// Whether the database is held, and its last resume.
    async fn hold_state(&self) -> Result<HoldRow>;
    /// Holds the database (`reason` said on the Cluster page), or with `None` resumes it,
    /// naming who. Returns whether it changed (holding a held database keeps its reason).
    async fn set_hold(&self, reason: Option<&str>, by: &str, now: DateTime<Utc>) -> Result<bool>;
    /// The newest migration applied.
    async fn schema_version(&self) -> Result<i64>;
    /// Takes the scheduled backup of `slot` for `process` unless another process took it:
    /// the new run's id, or `None`.
    async fn begin_backup(&self, slot: i64, process: &str, now: DateTime<Utc>) -> Result<Option<Uuid>>;
    async fn finish_backup(&self, id: Uuid, end: &BackupEnd, now: DateTime<Utc>) -> Result<()>;
    /// The latest scheduled backups, newest first.
    async fn backup_runs(&self, limit: i64) -> Result<Vec<BackupRunRow>>;
    /// Marks failed the backups still `running` whose process has no heartbeat since
    /// `alive_since` (killed while it took them); how many.
    async fn fail_orphaned_backups(&self, now: DateTime<Utc>, alive_since: DateTime<Utc>) -> Result<u64>;
    /// Whether a `trellis transfer` into this database has not finished (its ledger is there).
    async fn transfer_unfinished(&self) -> Result<bool>;
}

pub(super) const REGISTER_PROCESS: &str = "INSERT INTO processes \
    (id, version, schema_known, host, pid, listen, started_at, last_seen, draining) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
    ON CONFLICT (id) DO UPDATE SET version = excluded.version, schema_known = excluded.schema_known, \
    host = excluded.host, pid = excluded.pid, listen = excluded.listen, started_at = excluded.started_at, \
    last_seen = excluded.last_seen, draining = excluded.draining";
pub(super) const HEARTBEAT: &str = "UPDATE processes SET last_seen = $2, draining = $3 WHERE id = $1";
pub(super) const REMOVE_PROCESS: &str = "DELETE FROM processes WHERE id = $1";
pub(super) const PRUNE_PROCESSES: &str = "DELETE FROM processes WHERE last_seen < $1";
pub(super) const PROCESSES: &str = "SELECT id, version, schema_known, host, pid, listen, started_at, last_seen, \
    draining FROM processes WHERE last_seen >= $1 ORDER BY last_seen DESC, id";
pub(super) const HOLD_STATE: &str =
    "SELECT held, held_reason, held_since, resumed_at, resumed_by, compatible_from FROM cluster_state WHERE id = 1";
pub(super) const HOLD: &str =
    "UPDATE cluster_state SET held = TRUE, held_reason = $1, held_since = $2 WHERE id = 1 AND NOT held";
pub(super) const RESUME: &str = "UPDATE cluster_state SET held = FALSE, held_reason = NULL, held_since = NULL, \
    resumed_at = $1, resumed_by = $2 WHERE id = 1 AND held";
pub(super) const SCHEMA_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success";
pub(super) const BEGIN_BACKUP: &str = "INSERT INTO backup_runs (id, slot, process_id, started_at, outcome) \
    VALUES ($1, $2, $3, $4, 'running') ON CONFLICT (slot) DO NOTHING";
pub(super) const FINISH_BACKUP: &str = "UPDATE backup_runs SET finished_at = $2, outcome = $3, file = $4, \
    bytes = $5, error = $6 WHERE id = $1";
pub(super) const BACKUP_RUNS: &str = "SELECT id, slot, process_id, started_at, finished_at, outcome, file, bytes, \
    error FROM backup_runs ORDER BY started_at DESC LIMIT $1";
pub(super) const FAIL_ORPHANED_BACKUPS: &str = "UPDATE backup_runs SET outcome = 'failed', finished_at = $1, \
    error = 'the process taking it stopped before it finished' \
    WHERE outcome = 'running' AND process_id NOT IN (SELECT id FROM processes WHERE last_seen >= $2)";
pub(super) const TRANSFER_LEDGER: &str = "SELECT 1 FROM _trellis_transfer LIMIT 1";
