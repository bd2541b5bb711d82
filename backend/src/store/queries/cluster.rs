//! `cluster.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::cluster::{
    BackupEnd, BackupRunRow, HoldRow, ProcessRow, BACKUP_RUNS, BEGIN_BACKUP, FAIL_ORPHANED_BACKUPS, FINISH_BACKUP,
    HEARTBEAT, HOLD, HOLD_STATE, PROCESSES, PRUNE_PROCESSES, REGISTER_PROCESS, REMOVE_PROCESS, RESUME, SCHEMA_VERSION,
    TRANSFER_LEDGER,
};
use crate::store::Result;
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::ClusterStore for Store {
    async fn register_process(&self, p: &ProcessRow) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(REGISTER_PROCESS)
            .bind(&p.id)
            .bind(&p.version)
            .bind(p.schema_known)
            .bind(&p.host)
            .bind(p.pid)
            .bind(&p.listen)
            .bind(p.started_at)
            .bind(p.last_seen)
            .bind(p.draining)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    async fn heartbeat(&self, id: &str, now: DateTime<Utc>, draining: bool) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(HEARTBEAT).bind(id).bind(now).bind(draining).execute(self.pool()).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn remove_process(&self, id: &str) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(REMOVE_PROCESS).bind(id).execute(self.pool()).await?;
        Ok(())
    }

    async fn prune_processes(&self, before: DateTime<Utc>) -> Result<u64> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query(PRUNE_PROCESSES).bind(before).execute(self.pool()).await?.rows_affected())
    }

    async fn processes(&self, since: DateTime<Utc>) -> Result<Vec<ProcessRow>> {
        Ok(sqlx::query_as(PROCESSES).bind(since).fetch_all(self.pool()).await?)
    }

    async fn hold_state(&self) -> Result<HoldRow> {
        Ok(sqlx::query_as(HOLD_STATE).fetch_optional(self.pool()).await?.unwrap_or_default())
    }

    async fn set_hold(&self, reason: Option<&str>, by: &str, now: DateTime<Utc>) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = match reason {
            Some(reason) => sqlx::query(HOLD).bind(reason).bind(now).execute(self.pool()).await?,
            None => sqlx::query(RESUME).bind(now).bind(by).execute(self.pool()).await?,
        };
        Ok(done.rows_affected() > 0)
    }

    async fn schema_version(&self) -> Result<i64> {
        Ok(sqlx::query_scalar(SCHEMA_VERSION).fetch_one(self.pool()).await?)
    }

    async fn begin_backup(&self, slot: i64, process: &str, now: DateTime<Utc>) -> Result<Option<Uuid>> {
        let _guard = self.write_guard().await;
        let id = Uuid::now_v7();
        let done = sqlx::query(BEGIN_BACKUP).bind(id).bind(slot).bind(process).bind(now).execute(self.pool()).await?;
        Ok((done.rows_affected() > 0).then_some(id))
    }

    async fn finish_backup(&self, id: Uuid, end: &BackupEnd, now: DateTime<Utc>) -> Result<()> {
        let _guard = self.write_guard().await;
        let (outcome, file, bytes, error) = match end {
            BackupEnd::Succeeded { file, bytes } => ("succeeded", Some(file.as_str()), Some(*bytes), None),
            BackupEnd::Failed { error } => ("failed", None, None, Some(error.as_str())),
        };
        sqlx::query(FINISH_BACKUP)
            .bind(id)
            .bind(now)
            .bind(outcome)
            .bind(file)
            .bind(bytes)
            .bind(error)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    async fn backup_runs(&self, limit: i64) -> Result<Vec<BackupRunRow>> {
        Ok(sqlx::query_as(BACKUP_RUNS).bind(limit).fetch_all(self.pool()).await?)
    }

    async fn fail_orphaned_backups(&self, now: DateTime<Utc>, alive_since: DateTime<Utc>) -> Result<u64> {
        let _guard = self.write_guard().await;
        let query = sqlx::query(FAIL_ORPHANED_BACKUPS).bind(now).bind(alive_since);
        Ok(query.execute(self.pool()).await?.rows_affected())
    }

    async fn transfer_unfinished(&self) -> Result<bool> {
        // The ledger's own table, when it exists; no such table is the usual answer.
        match sqlx::query(TRANSFER_LEDGER).fetch_optional(self.pool()).await {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}
