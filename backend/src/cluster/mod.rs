//! The processes serving one database, seen together: each process's release and heartbeat
//! ([`registry`]), the hold a restored database comes up under ([`hold`]), and the backups the
//! servers take on a schedule ([`schedule`]). `GET /api/v1/cluster` shows all of it
//! (`http/resources/cluster.rs`).

pub mod compat;
pub mod hold;
pub mod registry;
pub mod schedule;

pub use hold::Hold;
pub use registry::Registry;

/// This build's release, as `trellis --version` prints it and processes record it.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// How often a process stamps its heartbeat (and reads the hold).
pub const HEARTBEAT_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// A process whose heartbeat is older than this is taken for dead (killed, or its machine
/// gone): six missed heartbeats.
pub const ALIVE_WITHIN: chrono::Duration = chrono::Duration::seconds(30);

/// What `trellis restore` writes as the reason a restored database is held.
pub fn restored_reason(file: &str, created_at: chrono::DateTime<chrono::Utc>) -> String {
    format!("restored from the backup {file} taken {}", created_at.format("%Y-%m-%d %H:%M:%S UTC"))
}
