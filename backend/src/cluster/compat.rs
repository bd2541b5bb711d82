//! Two releases side by side on one database. Migrations are written expand-then-contract: an
//! expanding one (a new table, a new column with a default) leaves the schema usable by the
//! release before it; a contracting one — marked by a line `-- trellis: contract` — does not.
//!
//! So a process starts on a database a newer release has migrated (migrations it does not know
//! are ignored), unless that release raised `cluster_state.compatible_from` past what it knows.
//! A newer release applies a contracting migration only once no live process knows less than
//! it (it waits, saying whom for), then raises `compatible_from`; a process found older than
//! that while running (one that was paused past its heartbeat) holds itself and says why.

use crate::store::ProcessRow;
use chrono::{DateTime, Utc};
use sqlx::migrate::{Migration, Migrator};

/// The line a contracting migration carries.
pub const CONTRACT_MARK: &str = "-- trellis: contract";

/// Contracting migrations from before the mark (their files cannot change: sqlx checks their
/// checksums): 0025, since which every writer of an instance counts its writes.
const MARKED_BEFORE: &[i64] = &[25];

pub fn is_contract(migration: &Migration) -> bool {
    MARKED_BEFORE.contains(&migration.version) || migration.sql.lines().any(|line| line.trim() == CONTRACT_MARK)
}

/// The schema a process must know to run on a database `migrator` has migrated: its newest
/// contracting migration.
pub fn compatible_from(migrator: &Migrator) -> i64 {
    migrator.iter().filter(|m| is_contract(m)).map(|m| m.version).max().unwrap_or(0)
}

/// The contracting migrations of `migrator` not in `applied`, oldest first.
pub fn pending_contracts(migrator: &Migrator, applied: &[i64]) -> Vec<i64> {
    migrator.iter().filter(|m| is_contract(m) && !applied.contains(&m.version)).map(|m| m.version).collect()
}

/// The live processes (but `me`) that know less than `version`: they must be gone first.
pub fn blockers<'a>(
    version: i64,
    processes: &'a [ProcessRow],
    me: Option<&str>,
    now: DateTime<Utc>,
) -> Vec<&'a ProcessRow> {
    processes
        .iter()
        .filter(|p| Some(p.id.as_str()) != me && super::registry::is_alive(p, now) && p.schema_known < version)
        .collect()
}

/// Raises the database's `compatible_from` to what the release that migrated it needs.
pub const RAISE_COMPATIBLE_FROM: &str =
    "UPDATE cluster_state SET compatible_from = $1 WHERE id = 1 AND compatible_from < $1";
pub const COMPATIBLE_FROM: &str = "SELECT compatible_from FROM cluster_state WHERE id = 1";

/// Why a process whose release knows `known` may not run on a database compatible from `from`.
pub fn too_old(known: i64, from: i64) -> Option<String> {
    (known < from).then(|| {
        format!(
            "this release knows schema {known}, but the database was migrated past a change it cannot run beside \
             (it needs schema {from} or newer): run this process's newer release"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(id: &str, known: i64, seen_secs_ago: i64) -> ProcessRow {
        let now = Utc::now();
        ProcessRow {
            id: id.into(),
            version: "x".into(),
            schema_known: known,
            host: "h".into(),
            pid: 1,
            listen: "l".into(),
            started_at: now,
            last_seen: now - chrono::Duration::seconds(seen_secs_ago),
            draining: false,
        }
    }

    #[test]
    fn a_contract_waits_for_live_processes_that_know_less_and_no_others() {
        let all = [process("old", 29, 2), process("gone", 29, 120), process("new", 31, 1), process("me", 29, 0)];
        let waiting: Vec<&str> = blockers(31, &all, Some("me"), Utc::now()).iter().map(|p| p.id.as_str()).collect();
        assert_eq!(waiting, ["old"]);
        assert!(blockers(29, &all, Some("me"), Utc::now()).is_empty());
    }

    #[test]
    fn contracts_are_marked_or_known_from_before_the_mark() {
        let migrator = sqlx::migrate!("../migrations/postgres");
        assert_eq!(compatible_from(&migrator), 25);
        assert_eq!(pending_contracts(&migrator, &[1, 2]), [25]);
        assert!(too_old(24, 25).is_some() && too_old(25, 25).is_none());
    }
}
