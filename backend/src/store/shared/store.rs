//! `sql.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::records::{
    ApiKeyRecord, NewUser, NewVersion, NewWorkflow, UserRecord, VersionInfo, VersionRecord, WorkflowChange,
    WorkflowQuery, WorkflowRecord, WriteOutcome,
};
use crate::store::sql::{like_pattern, WORKFLOW_COLUMNS};
use crate::store::{Result, StoreError};
use chrono::Utc;
use sqlx::types::Json;
use trellis_model::Definition;
use uuid::Uuid;
type Db = <Store as Backend>::Db;

#[async_trait::async_trait]
impl crate::store::Store for Store {
    fn backend(&self) -> &'static str {
        Self::NAME
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(self.pool()).await?;
        Ok(())
    }

    async fn setting_or_init(&self, key: &str, value: &str) -> Result<String> {
        let _guard = self.write_guard().await;
        sqlx::query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING")
            .bind(key)
            .bind(value)
            .execute(self.pool())
            .await?;
        let (stored,): (String,) =
            sqlx::query_as("SELECT value FROM settings WHERE key = $1").bind(key).fetch_one(self.pool()).await?;
        Ok(stored)
    }

    async fn count_users(&self) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users").fetch_one(self.pool()).await?;
        Ok(n)
    }

    async fn insert_user(&self, user: &NewUser) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(
            "INSERT INTO users (id, username, password_hash, role, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (username) DO NOTHING",
        )
        .bind(user.id)
        .bind(&user.username)
        .bind(&user.password_hash)
        .bind(user.role.as_str())
        .bind(user.created_at)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn user_by_name(&self, username: &str) -> Result<Option<UserRecord>> {
        Ok(sqlx::query_as(
            "SELECT id, username, password_hash, role, created_at, disabled_at FROM users WHERE username = $1",
        )
        .bind(username)
        .fetch_optional(self.pool())
        .await?)
    }

    async fn user_by_id(&self, id: Uuid) -> Result<Option<UserRecord>> {
        Ok(sqlx::query_as("SELECT id, username, password_hash, role, created_at, disabled_at FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    async fn set_password(&self, username: &str, hash: &str) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query("UPDATE users SET password_hash = $1, updated_at = $2 WHERE username = $3")
            .bind(hash)
            .bind(Utc::now())
            .bind(username)
            .execute(&mut *tx)
            .await?;
        // A new password ends the sessions signed in with the old one.
        sqlx::query("DELETE FROM sessions WHERE user_id IN (SELECT id FROM users WHERE username = $1)")
            .bind(username)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(
            "INSERT INTO api_keys (id, name, prefix, key_hash, role, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(key.id)
        .bind(&key.name)
        .bind(&key.prefix)
        .bind(&key.key_hash)
        .bind(key.role)
        .bind(&key.created_by)
        .bind(key.created_at)
        .execute(self.pool())
        .await
        .map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>> {
        Ok(sqlx::query_as(
            // A key made by a user who is now disabled stops working with them.
            "SELECT id, name, prefix, key_hash, role, created_by, created_at FROM api_keys k \
             WHERE key_hash = $1 AND revoked_at IS NULL AND NOT EXISTS \
             (SELECT 1 FROM users u WHERE u.username = k.created_by AND u.disabled_at IS NOT NULL)",
        )
        .bind(key_hash)
        .fetch_optional(self.pool())
        .await?)
    }

    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRecord>> {
        Ok(sqlx::query_as(
            "SELECT id, name, prefix, key_hash, role, created_by, created_at FROM api_keys \
             WHERE revoked_at IS NULL ORDER BY id",
        )
        .fetch_all(self.pool())
        .await?)
    }

    async fn revoke_api_key(&self, id: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(Utc::now())
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn create_workflow(&self, new: &NewWorkflow) -> Result<WorkflowRecord> {
        let _guard = self.write_guard().await;
        let sql = format!(
            "INSERT INTO workflows (id, name, description, draft, draft_rev, archived, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 1, $5, $6, $6) RETURNING {WORKFLOW_COLUMNS}"
        );
        Ok(sqlx::query_as(&sql)
            .bind(new.id)
            .bind(&new.name)
            .bind(&new.description)
            .bind(Json(&new.draft))
            .bind(false)
            .bind(new.now)
            .fetch_one(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?)
    }

    async fn list_workflows(&self, q: &WorkflowQuery) -> Result<Vec<WorkflowRecord>> {
        let sql = format!(
            "SELECT {WORKFLOW_COLUMNS} FROM workflows \
             WHERE ($1 OR archived = $2) AND ($3 IS NULL OR id < $3) \
             AND ($4 IS NULL OR LOWER(name) LIKE $4 ESCAPE '\\') \
             ORDER BY id DESC LIMIT $5"
        );
        Ok(sqlx::query_as(&sql)
            .bind(q.include_archived)
            .bind(false)
            .bind(q.before)
            .bind(q.name_contains.as_deref().map(like_pattern))
            .bind(q.limit)
            .fetch_all(self.pool())
            .await?)
    }

    async fn get_workflow(&self, id: Uuid) -> Result<Option<WorkflowRecord>> {
        let sql = format!("SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE id = $1");
        Ok(sqlx::query_as(&sql).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn workflow_names(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = sqlx::QueryBuilder::<Db>::new("SELECT id, name FROM workflows WHERE id IN (");
        let mut list = sql.separated(", ");
        for id in ids {
            list.push_bind(*id);
        }
        sql.push(")");
        Ok(sql.build_query_as().fetch_all(self.pool()).await?)
    }

    async fn update_workflow(&self, id: Uuid, change: &WorkflowChange) -> Result<Option<WorkflowRecord>> {
        let _guard = self.write_guard().await;
        let sql = format!(
            "UPDATE workflows SET name = COALESCE($1, name), description = COALESCE($2, description), \
             archived = COALESCE($3, archived), updated_at = $4 WHERE id = $5 RETURNING {WORKFLOW_COLUMNS}"
        );
        Ok(sqlx::query_as(&sql)
            .bind(&change.name)
            .bind(&change.description)
            .bind(change.archived)
            .bind(Utc::now())
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    async fn save_draft(&self, id: Uuid, expected_rev: Option<i64>, draft: &Definition) -> Result<WriteOutcome<i64>> {
        let _guard = self.write_guard().await;
        // One compare-and-swap statement: of two saves holding the same revision,
        // exactly one matches the row.
        let saved: Option<(i64,)> = sqlx::query_as(
            "UPDATE workflows SET draft = $1, draft_rev = draft_rev + 1, updated_at = $2 \
             WHERE id = $3 AND archived = $4 AND ($5 IS NULL OR draft_rev = $5) RETURNING draft_rev",
        )
        .bind(Json(draft))
        .bind(Utc::now())
        .bind(id)
        .bind(false)
        .bind(expected_rev)
        .fetch_optional(self.pool())
        .await?;
        match saved {
            Some((rev,)) => Ok(WriteOutcome::Done(rev)),
            None => self.why_not_written(id).await,
        }
    }

    async fn publish(&self, id: Uuid, draft_rev: i64, v: &NewVersion) -> Result<WriteOutcome<i64>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // Writing first takes the row (Postgres) or database (SQLite) write lock before
        // anything is read, so concurrent publishes queue instead of racing.
        let bumped: Option<(i64,)> = sqlx::query_as(
            "UPDATE workflows SET latest_version = COALESCE(latest_version, 0) + 1, updated_at = $1 \
             WHERE id = $2 AND archived = $3 AND draft_rev = $4 RETURNING latest_version",
        )
        .bind(v.now)
        .bind(id)
        .bind(false)
        .bind(draft_rev)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((version,)) = bumped else {
            drop(tx);
            return self.why_not_written(id).await;
        };
        sqlx::query(
            "INSERT INTO workflow_versions (workflow_id, version, definition, note, published_by, published_at) \
             SELECT id, latest_version, draft, $1, $2, $3 FROM workflows WHERE id = $4",
        )
        .bind(&v.note)
        .bind(&v.published_by)
        .bind(v.now)
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::from_sqlx)?;
        tx.commit().await?;
        Ok(WriteOutcome::Done(version))
    }

    async fn list_versions(&self, workflow: Uuid) -> Result<Vec<VersionInfo>> {
        Ok(sqlx::query_as(
            "SELECT version, note, published_by, published_at FROM workflow_versions \
             WHERE workflow_id = $1 ORDER BY version DESC",
        )
        .bind(workflow)
        .fetch_all(self.pool())
        .await?)
    }

    async fn get_version(&self, workflow: Uuid, version: i64) -> Result<Option<VersionRecord>> {
        Ok(sqlx::query_as(
            "SELECT workflow_id, version, definition, note, published_by, published_at \
             FROM workflow_versions WHERE workflow_id = $1 AND version = $2",
        )
        .bind(workflow)
        .bind(version)
        .fetch_optional(self.pool())
        .await?)
    }
}

impl Store {
    /// After a conditional write matched no row: was it missing, archived or stale?
    async fn why_not_written<T>(&self, id: Uuid) -> Result<WriteOutcome<T>> {
        let row: Option<(bool,)> =
            sqlx::query_as("SELECT archived FROM workflows WHERE id = $1").bind(id).fetch_optional(self.pool()).await?;
        Ok(match row {
            None => WriteOutcome::NotFound,
            Some((true,)) => WriteOutcome::Archived,
            Some((false,)) => WriteOutcome::Stale,
        })
    }
}
