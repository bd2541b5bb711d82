//! `audit.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::audit::{LIST_AUDIT, SWEEP_AUDIT};
use crate::store::backend::Backend;
use crate::store::catalog::like_pattern;
use crate::store::Result;
use chrono::{DateTime, Utc};

#[async_trait::async_trait]
impl crate::store::AuditStore for Store {
    async fn insert_audit(&self, rows: &[crate::store::AuditRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let _guard = self.write_guard().await;
        let sql = crate::store::audit::insert_statement(rows.len());
        let mut query = sqlx::query(&sql);
        let rows: Vec<crate::store::AuditRow> = rows.iter().map(crate::store::AuditRow::sanitized).collect();
        for r in &rows {
            query = query
                .bind(r.id)
                .bind(r.at)
                .bind(&r.actor_id)
                .bind(&r.actor_name)
                .bind(r.actor_role)
                .bind(&r.action)
                .bind(&r.target)
                .bind(r.status)
                .bind(&r.detail)
                .bind(&r.request_id);
        }
        query.execute(self.pool()).await?;
        Ok(())
    }

    async fn list_audit(&self, q: &crate::store::AuditQuery) -> Result<Vec<crate::store::AuditRow>> {
        Ok(sqlx::query_as(LIST_AUDIT)
            .bind(&q.actor)
            .bind(q.action_contains.as_deref().map(like_pattern))
            .bind(&q.target)
            .bind(q.since)
            .bind(q.until)
            .bind(q.before)
            .bind(q.limit)
            .fetch_all(self.pool())
            .await?)
    }

    async fn sweep_audit(&self, before: DateTime<Utc>, limit: i64) -> Result<u64> {
        let _guard = self.write_guard().await;
        // Rows are never updated, so two processes sweeping at once at worst both
        // delete nothing for the rows the other took first.
        let done = sqlx::query(SWEEP_AUDIT).bind(before).bind(limit).execute(self.pool()).await?;
        Ok(done.rows_affected())
    }
}
