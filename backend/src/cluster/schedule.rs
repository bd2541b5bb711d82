//! Scheduled backups (`TRELLIS_BACKUP_DIR`, `TRELLIS_BACKUP_EVERY`, `TRELLIS_BACKUP_KEEP`).
//!
//! Time is cut into periods of `every` counted from the Unix epoch (`slot` = ms ÷ period), so
//! every process agrees when a backup is due. At each period's start, every process with a
//! backup folder tries to insert that slot's `backup_runs` row; the unique `slot` lets exactly
//! one win and take the backup (`crate::backup::create`: staged, checked, renamed). Then the
//! newest `keep` backups this database recorded stay; older recorded ones are deleted. A failure is recorded on the run and
//! raised to every `backup_failed` alert rule. Nothing is taken while the database is held.

use super::Hold;
use crate::alerts::slack_escape;
use crate::config::{BackupArgs, DatabaseConfig};
use crate::store::{AlertStore, BackupEnd, ClusterStore, NewDelivery};
use chrono::{DateTime, Utc};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use trellis_model::api::AlertWhen;
use uuid::Uuid;

/// The file names scheduled backups are written under (see `backup::files::default_name`).
const PREFIX: &str = "trellis-backup-";
/// Recorded runs looked through for files past `keep` (older ones were deleted by then).
const RUNS_LOOKED_AT: i64 = 500;

pub struct Schedule {
    cluster: Arc<dyn ClusterStore>,
    alerts: Arc<dyn AlertStore>,
    db: DatabaseConfig,
    dir: PathBuf,
    every: Duration,
    keep: usize,
    process: String,
    hold: Hold,
}

/// What a scheduled backup took.
#[derive(Debug, PartialEq)]
pub enum Taken {
    /// Another process took this period's backup.
    ByOther,
    Written(PathBuf),
    Failed(String),
}

impl Schedule {
    /// The schedule `args` set, or `None` when no folder is given.
    pub fn from_args(
        store: &crate::store::DynStore,
        db: &DatabaseConfig,
        args: &BackupArgs,
        process: &str,
        hold: Hold,
    ) -> Option<Schedule> {
        let dir = args.dir.clone()?;
        Some(Schedule {
            cluster: store.clone(),
            alerts: store.clone(),
            db: db.clone(),
            dir,
            every: args.every.max(Duration::from_secs(1)),
            keep: args.keep.max(1) as usize,
            process: process.to_owned(),
            hold,
        })
    }

    /// Takes a backup at the start of each period until `shutdown`.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        if let Err(e) = std::fs::create_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot make the backup folder; scheduled backups will fail");
        }
        while !*shutdown.borrow() {
            let (slot, wait) = next_slot(Utc::now(), self.every);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => continue,
            }
            if self.hold.is_held() {
                tracing::info!("the database is held: the scheduled backup is skipped");
                continue;
            }
            match self.take(slot).await {
                Ok(Taken::Written(file)) => tracing::info!(file = %file.display(), "scheduled backup written"),
                Ok(Taken::Failed(why)) => tracing::error!(error = %why, "scheduled backup failed"),
                Ok(Taken::ByOther) => {}
                Err(e) => tracing::warn!(error = %e, "could not record the scheduled backup"),
            }
        }
    }

    /// Takes `slot`'s backup unless another process has: writes it, records how it went,
    /// keeps the newest `keep`, and raises a failure to `backup_failed` rules.
    pub async fn take(&self, slot: i64) -> crate::store::Result<Taken> {
        let started = Utc::now();
        let Some(run) = self.cluster.begin_backup(slot, &self.process, started).await? else {
            return Ok(Taken::ByOther);
        };
        let target = self.dir.join(crate::backup::files::default_name(started, self.extension()));
        let (end, taken) = match crate::backup::create(&self.db, Some(target)).await {
            Ok((file, _)) => {
                let bytes = std::fs::metadata(&file).map(|m| m.len() as i64).unwrap_or(0);
                (BackupEnd::Succeeded { file: file.display().to_string(), bytes }, Taken::Written(file))
            }
            Err(e) => {
                let error = format!("{e:#}");
                (BackupEnd::Failed { error: error.clone() }, Taken::Failed(error))
            }
        };
        self.cluster.finish_backup(run, &end, Utc::now()).await?;
        if matches!(taken, Taken::Written(_)) {
            self.keep_newest().await?;
        }
        if let Taken::Failed(error) = &taken {
            self.raise(run, started, error).await?;
        }
        Ok(taken)
    }

    fn extension(&self) -> &'static str {
        let url = &self.db.database_url;
        if crate::store::is_postgres_url(url) {
            crate::backup::archive::EXTENSION
        } else {
            crate::backup::sqlite::EXTENSION
        }
    }

    /// Deletes this database's scheduled backups but the newest `keep`: only files its
    /// `backup_runs` recorded, so a backup made by hand, or another installation's in a shared
    /// folder, is never touched.
    async fn keep_newest(&self) -> crate::store::Result<()> {
        let runs = self.cluster.backup_runs(RUNS_LOOKED_AT).await?;
        let written = runs.iter().filter(|r| r.outcome == "succeeded").filter_map(|r| r.file.as_deref());
        for old in written.skip(self.keep).map(Path::new).filter(|f| f.exists() && self.is_ours(f)) {
            if let Err(e) = std::fs::remove_file(old) {
                tracing::warn!(file = %old.display(), error = %e, "could not delete an old scheduled backup");
            }
        }
        Ok(())
    }

    /// A file in this schedule's folder named as scheduled backups are.
    fn is_ours(&self, file: &Path) -> bool {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        file.parent() == Some(self.dir.as_path())
            && name.starts_with(PREFIX)
            && (name.ends_with(crate::backup::sqlite::EXTENSION) || name.ends_with(crate::backup::archive::EXTENSION))
    }

    /// Records a `backup_failed` delivery for every such rule, once per run.
    async fn raise(&self, run: Uuid, started: DateTime<Utc>, error: &str) -> crate::store::Result<()> {
        let now = Utc::now();
        for rule in self.alerts.alert_rules_on(AlertWhen::BackupFailed.as_str(), None).await? {
            let body = failed_body((&rule.id, &rule.name), run, started, &self.dir, error);
            let delivery = NewDelivery {
                id: Uuid::now_v7(),
                rule_id: rule.id,
                event: AlertWhen::BackupFailed.into(),
                source_key: format!("backup_failed:{run}"),
                group_key: None,
                instance_id: None,
                body: body.to_string(),
                now,
                dedupe_since: None,
                sent: None,
            };
            self.alerts.record_delivery(&delivery).await?;
        }
        Ok(())
    }
}

/// The period after `now`'s: its slot number and how long until it starts.
pub fn next_slot(now: DateTime<Utc>, every: Duration) -> (i64, Duration) {
    let period = every.as_millis().max(1) as i64;
    let slot = now.timestamp_millis().div_euclid(period) + 1;
    let wait = slot * period - now.timestamp_millis();
    (slot, Duration::from_millis(wait.max(0) as u64))
}

/// The JSON of a `backup_failed` delivery (Slack-compatible `text`).
fn failed_body(rule: (&Uuid, &str), run: Uuid, started: DateTime<Utc>, dir: &Path, error: &str) -> serde_json::Value {
    let text = format!(
        "Trellis: the scheduled backup into {} failed: {}",
        slack_escape(&dir.display().to_string()),
        slack_escape(error)
    );
    json!({
        "type": "backup.failed",
        "event": "backup_failed",
        "rule": {"id": rule.0, "name": rule.1},
        "backup": {"id": run, "started_at": started, "dir": dir.display().to_string(), "error": error},
        "text": text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_period_starts_on_its_boundary() {
        let at = |ms| DateTime::from_timestamp_millis(ms).unwrap();
        assert_eq!(next_slot(at(10_500), Duration::from_secs(2)), (6, Duration::from_millis(1_500)));
        assert_eq!(next_slot(at(12_000), Duration::from_secs(2)), (7, Duration::from_millis(2_000)));
        assert_eq!(next_slot(at(0), Duration::from_secs(3600)).0, 1);
    }
}
