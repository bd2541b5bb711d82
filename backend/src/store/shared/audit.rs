//! `audit_sql.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::sql::like_pattern;
use crate::store::Result;
use chrono::{DateTime, Utc};

#[async_trait::async_trait]
impl crate::store::AuditStore for Store {
    async fn insert_audit(&self, rows: &[crate::store::AuditRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let _guard = self.write_guard().await;
        let sql = crate::store::audit_sql::insert_statement(rows.len());
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
        let sql = format!(
            "SELECT {} FROM audit_log \
             WHERE ($1 IS NULL OR actor_name = $1 OR actor_id = $1) \
               AND ($2 IS NULL OR LOWER(action) LIKE $2 ESCAPE '\\') \
               AND ($3 IS NULL OR target = $3) \
               AND ($4 IS NULL OR at >= $4) \
               AND ($5 IS NULL OR at < $5) \
               AND ($6 IS NULL OR id < $6) \
             ORDER BY id DESC LIMIT $7",
            crate::store::audit_sql::AUDIT_COLUMNS
        );
        Ok(sqlx::query_as(&sql)
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
        let done = sqlx::query(
            "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)",
        )
        .bind(before)
        .bind(limit)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }
}
