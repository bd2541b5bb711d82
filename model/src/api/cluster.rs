//! The cluster (`/api/v1/cluster`, admins): the processes serving one database, their
//! releases, the schema, whether the database is held, and the backups the servers take.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `GET /cluster`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cluster {
    /// The newest migration applied to the database.
    pub schema_version: i64,
    /// The oldest schema a process's release may know and still run here: a process whose
    /// `schema_known` is lower claims no work (upgrade it).
    pub compatible_from: i64,
    /// Held: no schedule fires, no work is claimed, nothing is swept or alerted (a restored
    /// copy, until an admin resumes it). Starts are accepted and wait.
    pub held: bool,
    /// Why it is held (`null` when not held).
    pub held_reason: Option<String>,
    pub held_since: Option<DateTime<Utc>>,
    /// The last resume: when and by whom (`null` if never).
    pub resumed_at: Option<DateTime<Utc>>,
    pub resumed_by: Option<String>,
    /// Processes seen in the last day, alive ones first, then newest first.
    pub processes: Vec<ClusterProcess>,
    /// What the answering process's scheduled backups are set to (`null`: it takes none).
    pub backup_schedule: Option<BackupSchedule>,
    /// The latest scheduled backups, newest first (at most 20).
    pub backups: Vec<BackupRun>,
}

/// One `trellis serve` process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterProcess {
    /// The process's name in leases (`host-uuid`).
    pub id: String,
    /// Its release (`trellis --version`).
    pub version: String,
    /// The newest migration its release carries.
    pub schema_known: i64,
    pub host: String,
    pub pid: i64,
    /// The address it serves on.
    pub listen: String,
    pub started_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// Stopping: it takes no new work and finishes what it runs.
    pub draining: bool,
    /// Its heartbeat is recent (within 30 s); a process killed without stopping is not.
    pub alive: bool,
    /// The process answering this request.
    pub this_process: bool,
}

/// `TRELLIS_BACKUP_DIR`, `TRELLIS_BACKUP_EVERY` and `TRELLIS_BACKUP_KEEP`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupSchedule {
    pub dir: String,
    pub every_secs: u64,
    /// How many of the newest scheduled backups are kept in `dir`.
    pub keep: u32,
}

/// One scheduled backup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BackupRun {
    pub id: String,
    /// The process that took it.
    pub process_id: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `running`, `succeeded` or `failed`.
    pub outcome: String,
    /// The file written (succeeded only).
    pub file: Option<String>,
    pub bytes: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
}
